"""Where Coding-v0 runs code: a private folder per env, a fresh child per step, or a REPL.

The folder (under :func:`tempfile.gettempdir`, which the docker provider makes a sized
tmpfs) holds ``io/`` (code, test plan and results files the worker writes and reads) and
one fresh, empty ``run-N/`` working directory per step. Everything is removed on close.

Example:
    >>> box = Sandbox()
    >>> box.run_code("print(6 * 7)", timeout=5.0).stdout
    '42\\n'
    >>> box.close()
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from openenv_gym.envs._exec import Child, ExecResult, Limits, minimal_environ, python_argv
from openenv_gym.envs.coding.humaneval import Problem

__all__ = ["Sandbox", "Repl", "RUNNER_SOURCE"]

#: The child-side runner (see :mod:`openenv_gym.envs.coding.runner`), sent with ``-c``.
RUNNER_SOURCE = (Path(__file__).with_name("runner.py")).read_text(encoding="utf-8")


class Sandbox:
    """A private folder and the one-shot ways to run code in it.

    Args:
        limits: Resource limits of every child (the CPU limit follows each step's timeout).
        output_limit: Bytes of stdout and of stderr kept per step.
    """

    def __init__(self, limits: Limits | None = None, output_limit: int = 65536) -> None:
        self.limits = limits or Limits()
        self.output_limit = output_limit
        self.base = tempfile.mkdtemp(prefix="openenv-coding-")
        self.io = os.path.join(self.base, "io")
        os.mkdir(self.io, 0o700)
        self._counter = 0
        self.workdir = ""
        self.fresh_workdir()

    def fresh_workdir(self) -> str:
        """Replace the working directory with a new empty one and return its path."""
        old = self.workdir
        self._counter += 1
        self.workdir = os.path.join(self.base, f"run-{self._counter}")
        os.mkdir(self.workdir, 0o700)
        if old:
            _remove(old)
        return self.workdir

    def environ(self) -> dict[str, str]:
        """The child's whole environment: HOME and TMPDIR are its working directory."""
        return minimal_environ(HOME=self.workdir, TMPDIR=self.workdir)

    def _limits(self, timeout: float) -> Limits:
        return replace(self.limits, cpu_seconds=int(timeout) + 1) if self.limits.cpu_seconds else self.limits

    def _run(self, timeout: float, *args: str) -> ExecResult:
        child = Child(python_argv(self._limits(timeout), RUNNER_SOURCE, *args), cwd=self.workdir,
                      env=self.environ(), output_limit=self.output_limit)
        finished = child.pump(child.started + timeout)
        return child.finish(timed_out=not finished)

    def run_code(self, code: str, timeout: float) -> ExecResult:
        """Run ``code`` as ``__main__`` in a fresh working directory.

        Args:
            code: Python source.
            timeout: Wall-clock seconds.
        """
        self.fresh_workdir()
        path = os.path.join(self.io, "code.py")
        Path(path).write_text(code, encoding="utf-8")
        return self._run(timeout, "run", path)

    def run_checks(self, program: str, problem: Problem, timeout: float,
                   per_check: float) -> tuple[ExecResult, set[int]]:
        """Run a program, then each check of ``problem`` on it.

        Returns:
            The execution result and the indices of the checks that passed.
        """
        self.fresh_workdir()
        program_path = os.path.join(self.io, "program.py")
        plan_path = os.path.join(self.io, "plan.json")
        results_path = os.path.join(self.io, "results.txt")
        Path(program_path).write_text(program, encoding="utf-8")
        Path(plan_path).write_text(json.dumps({"preamble": problem.preamble, "plan": problem.plan,
                                               "entry_point": problem.entry_point}),
                                   encoding="utf-8")
        if os.path.exists(results_path):
            os.unlink(results_path)
        result = self._run(timeout, "check", program_path, plan_path, results_path, str(per_check))
        passed: set[int] = set()
        try:
            with open(results_path, encoding="utf-8", errors="replace") as f:
                for line in f.read(1 << 20).split():
                    if line.isdigit() and int(line) < problem.num_checks:
                        passed.add(int(line))
        except OSError:
            pass
        return result, passed

    def close(self) -> None:
        """Remove the folder."""
        _remove(self.base)


class Repl:
    """A persistent interpreter for one episode: cells share one namespace.

    A cell that times out, or code that exits the interpreter, ends the session; the next
    cell starts a new one (the observation says so on stderr).

    Args:
        sandbox: The folder to run in (its current working directory).
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.child: Child | None = None
        self._control = -1
        self._status = -1
        self._status_stream = None

    def start(self) -> None:
        """Start the interpreter (returns at once; it boots while the agent thinks)."""
        self.stop()
        control_r, self._control = os.pipe()
        self._status, status_w = os.pipe()
        # No CPU rlimit: it would add up over the whole episode; each cell has a wall clock.
        limits = replace(self.sandbox.limits, cpu_seconds=None)
        try:
            self.child = Child(python_argv(limits, RUNNER_SOURCE, "repl", str(control_r), str(status_w)),
                               cwd=self.sandbox.workdir, env=self.sandbox.environ(),
                               output_limit=self.sandbox.output_limit,
                               pass_fds=(control_r, status_w))
        finally:
            os.close(control_r)
            os.close(status_w)
        self._status_stream = self.child.watch(self._status)

    def run_cell(self, code: str, timeout: float) -> ExecResult:
        """Run one cell; output is what the cell printed."""
        note = ""
        if self.child is None or self.child.exited():
            note = "[interpreter restarted: earlier state is gone]\n" if self.child else ""
            self.start()
        child = self.child
        assert child is not None and self._status_stream is not None
        child.reset_output()
        self._status_stream.data.clear()
        started = time.monotonic()
        data = code.encode("utf-8")
        try:
            os.write(self._control, len(data).to_bytes(8, "big"))
            _write_all(self._control, data)
        except BrokenPipeError:
            pass  # it died before reading; pump sees the exit
        done = child.pump(started + timeout, until=lambda: b"\n" in self._status_stream.data)
        wall = time.monotonic() - started
        if done and b"\n" in self._status_stream.data:
            ok = json.loads(bytes(self._status_stream.data).split(b"\n", 1)[0]).get("ok", False)
            result = child.snapshot(exit_code=0 if ok else 1)
        else:  # timed out, exited, or flooded: this interpreter is over
            result = self._end(timed_out=not done)
        result.wall_time = wall
        result.stderr = note + result.stderr
        return result

    def _end(self, timed_out: bool) -> ExecResult:
        assert self.child is not None
        result = self.child.finish(timed_out=timed_out)
        self._close_fds()
        return result

    def _close_fds(self) -> None:
        for fd in (self._control, self._status):
            if fd >= 0:
                os.close(fd)
        self._control = self._status = -1

    def stop(self) -> None:
        """Kill the interpreter and everything it started."""
        if self.child is not None:
            self.child.finish()
            self.child = None
        self._close_fds()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _remove(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
