"""envs._exec.Child: deadlines, exit codes and descriptors of real child processes."""

from __future__ import annotations

import os
import sys
import time

from openenv_gym.envs._exec import Child, Limits, python_argv, run

# Writes, closes its output, then lives on: its pipes reach EOF well before it exits.
_CLOSES_EARLY = ("import os, sys, time\nprint('before', flush=True)\nos.close(1); os.close(2)\n"
                 "time.sleep({sleep})\nsys.exit(3)")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_child_that_closes_its_output_is_waited_for_until_it_exits() -> None:
    result = run([sys.executable, "-c", _CLOSES_EARLY.format(sleep=0.3)], timeout=30.0)
    assert result.exit_code == 3 and result.stdout == "before\n" and not result.timed_out


def test_the_deadline_holds_for_a_child_with_no_output_open() -> None:
    child = Child([sys.executable, "-c", _CLOSES_EARLY.format(sleep=60)])
    assert child.pump(time.monotonic() + 1.0) is False  # still running at the deadline
    result = child.finish(timed_out=True)
    assert result.timed_out and result.exit_code == -9 and result.stdout == "before\n"


def test_no_descriptor_outlives_its_child() -> None:
    run([sys.executable, "-c", "pass"], timeout=30.0)  # imports and caches settle first
    before = _open_fds()
    for _ in range(10):
        run(["true"], timeout=30.0)
        child = Child(["sleep", "60"])
        child.finish()
    assert _open_fds() == before


def test_python_children_skip_site_hooks_but_import_installed_packages() -> None:
    script = "import sys, numpy\nprint(sys.flags.no_site, numpy.__name__)\nexit(3)"
    result = run(python_argv(Limits(), script), timeout=30.0)
    assert (result.exit_code, result.stdout) == (3, "1 numpy\n"), result.stderr
