"""Code that closes its stdout, or sets it to None, is run as ``python file.py`` runs it.

The runner flushed both streams itself after the code, and that flush raised on a closed
stream or on None: a program ending in ``sys.stdout.close()`` exited 1 with the runner's
own traceback (reward 0 where Python exits 0), a REPL cell that did it lost the
interpreter, and a candidate that did it during a call failed its check."""

from __future__ import annotations

import subprocess
import sys
from typing import Iterator

import pytest

from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.envs.coding.sandbox import Repl, Sandbox

ENDINGS = ["import sys; print('out'); sys.stdout.close()",
           "import sys; print('out'); sys.stdout = None",
           "import sys; print('out'); sys.stderr.close()",
           "import sys; print('out'); sys.stderr = None"]


@pytest.fixture
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


@pytest.mark.parametrize("code", ENDINGS)
def test_a_program_that_closes_a_stream_exits_as_python_does(box: Sandbox, code: str) -> None:
    python = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    result = box.run_code(code, timeout=30.0)
    assert (result.exit_code, result.stdout, result.stderr) == (python.returncode, "out\n", "") \
        == (0, python.stdout, python.stderr)


@pytest.mark.parametrize("code", ENDINGS)
def test_a_cell_that_closes_a_stream_keeps_the_interpreter(box: Sandbox, code: str) -> None:
    repl = Repl(box)
    try:
        repl.start()
        result = repl.run_cell("x = 41\n" + code, timeout=30.0)
        assert result.exit_code == 0 and result.stderr == "", result
        result = repl.run_cell("x += 1", timeout=30.0)
        assert result.exit_code == 0 and result.stderr == "", result
        assert not repl.conversation.child.exited()
    finally:
        repl.stop()


def test_a_candidate_that_closes_its_stdout_passes_its_checks(box: Sandbox) -> None:
    problem = get_problem(0)
    program = problem.prompt + "    import sys; sys.stdout.close()\n" + problem.canonical_solution
    result, passed = grade(box, program, problem, timeout=30.0, per_check=10.0)
    assert passed == set(range(problem.num_checks)), result.stderr
    assert result.exit_code == 0 and result.stderr == ""
