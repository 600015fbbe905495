"""A traceback of the agent's code shows its lines, as ``python file.py`` shows them.

The code is compiled from a string, whose lines ``linecache`` cannot read back: the
traceback named each line (``File "<code>", line 2, in f``) without showing it, the part an
agent reads to fix its code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.envs.coding.sandbox import Repl, Sandbox

CODE = "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)\n"


@pytest.fixture
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


def test_a_step_shows_the_lines_python_shows(box: Sandbox, tmp_path: Path) -> None:
    script = tmp_path / "code.py"
    script.write_text(CODE)
    python = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    result = box.run_code(CODE, timeout=30.0)
    assert "    return 1 / x\n" in result.stderr
    assert result.stderr == python.stderr.replace(f'"{script}"', '"<code>"')
    assert (result.stdout, result.exit_code) == (python.stdout, python.returncode) == ("before\n", 1)


def test_a_cell_shows_the_lines_of_the_cells_it_went_through(box: Sandbox) -> None:
    repl = Repl(box)
    try:
        repl.start()
        assert repl.run_cell("def g(items):\n    return items[5]\n", timeout=30.0).exit_code == 0
        result = repl.run_cell("y = 2\ng([1])\n", timeout=30.0)
        assert result.exit_code == 1
        assert 'File "<cell 1>", line 2, in <module>\n    g([1])\n' in result.stderr
        assert 'File "<cell 0>", line 2, in g\n    return items[5]\n' in result.stderr
    finally:
        repl.stop()


def test_a_program_that_does_not_load_shows_the_line(box: Sandbox) -> None:
    problem = get_problem(0)
    result, passed = grade(box, problem.prompt + "    return True\n\nundefined_name + 1\n", problem,
                           timeout=30.0, per_check=10.0)
    assert not passed
    assert "    undefined_name + 1\n" in result.stderr and "NameError" in result.stderr


def test_the_sources_kept_for_tracebacks_are_bounded(box: Sandbox) -> None:
    # A cell may be 1 MiB: an episode of many must not keep them all in the interpreter's
    # memory (the runner is the interpreter's __main__ module, readable from a cell).
    repl = Repl(box)
    try:
        repl.start()
        for _ in range(40):
            assert repl.run_cell("x = 1\n" + "#" * (1 << 20) + "\n", timeout=30.0).exit_code == 0
        result = repl.run_cell("import sys\nkept = sys.modules['__main__']._SOURCES\n"
                               "print(sum(map(len, kept.values())), '<cell 40>' in kept)\n"
                               "x[0]", timeout=30.0)
        size, newest_kept = result.stdout.split()
        assert 8 << 20 < int(size) <= 16 << 20 and newest_kept == "True", result
        assert "    x[0]\n" in result.stderr
    finally:
        repl.stop()
