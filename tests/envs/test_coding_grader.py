"""The grader: checks judged in the worker, the completion's results let in as plain data only."""

from __future__ import annotations

import os
import pickle
from typing import Iterator

import pytest

from openenv_gym.envs.coding.grader import grade, plain_loads
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.envs.coding.sandbox import Sandbox


@pytest.fixture
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


class _Evil:
    def __reduce__(self):
        return (os.system, ("true",))


@pytest.mark.parametrize("value", [os.system, _Evil(), ("ok", [1, {"k": _Evil()}]), ("ok", 1.5j, OSError())])
def test_plain_loads_refuses_anything_that_names_a_global(value: object) -> None:
    with pytest.raises(pickle.UnpicklingError, match="not plain data"):
        plain_loads(pickle.dumps(value))


def test_plain_loads_keeps_plain_data_exactly() -> None:
    value = ("ok", {"a": [1, 2.5, float("inf"), None, True], 3: (b"x", {1, 2}, frozenset({3}), 1j)})
    assert plain_loads(pickle.dumps(value)) == value
    with pytest.raises(pickle.UnpicklingError):  # truncated
        plain_loads(pickle.dumps(value)[:-3])


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
