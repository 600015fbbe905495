"""Run an untrusted command in a child process with a deadline, rlimits and an output cap.

The one helper the Coding and Git environments share. Each child gets a session (and so a
process group) of its own — never the worker's — so a timeout, or code that signals its
own group, takes down the child and everything it started while the worker keeps serving.
Output is read with ``selectors`` in the calling thread; past the cap it is drained and
dropped (a truncation marker is appended), and a child that keeps flooding far past the
cap is killed instead of burning its whole timeout.

Limits are applied *inside* the child (``resource.setrlimit`` in a Python prelude, or
``ulimit`` in a shell prefix) rather than through ``preexec_fn``, which is unsafe in the
threaded worker (and forces a full ``fork``). Landlock (:mod:`openenv_gym.envs._confine`)
must hold from the child's first instruction: such a child is started by a thread that
confined itself. A child that runs code it was given (a shell command, a Python runner) is
held at a gate until that thread has ended (:class:`Child` with ``held``).

Example:
    >>> result = run([sys.executable, "-c", "print('hi')"], timeout=5.0)
    >>> result.stdout, result.exit_code, result.timed_out
    ('hi\\n', 0, False)
"""

from __future__ import annotations

import fcntl
import functools
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, TypeVar

from openenv_gym._numbers import is_finite, is_int
from openenv_gym.envs._confine import site_folders
from openenv_gym.envs._subreaper import PR_SET_CHILD_SUBREAPER, end_orphan, own_children, prctl

if TYPE_CHECKING:
    from openenv_gym.envs._confine import Ruleset
    from openenv_gym.providers._cgroup import WorkerCgroup

T = TypeVar("T")

__all__ = ["Limits", "step_timeouts", "ExecResult", "Child", "run", "kill_all", "adopt_orphans",
           "reap_orphans", "minimal_environ", "python_argv", "TRUNCATION_MARK", "NOTE_ROOM",
           "check_output_limit", "OUTPUT_LIMIT", "MAX_OUTPUT_TEXT", "gate_line", "held_start",
           "OOM_MARK", "CPU_MARK"]

#: Appended to a stream whose output went past the cap.
TRUNCATION_MARK = "\n[... output truncated at {limit} bytes ...]\n"
#: Appended when a child kept writing far past the cap and was killed for it.
FLOOD_MARK = "\n[... process killed: it kept writing past the output cap ...]\n"
#: Appended to stderr (stdout when merged) when the kernel's OOM killer ended the child: its
#: memory cgroup (the worker's, a container's) reached its limit. A SIGKILL says nothing
#: itself, and ``exit_code -9`` with empty output looked like a crash or a kill of ours.
OOM_MARK = "\n[killed: out of memory at the sandbox's memory limit{limit}]\n"
#: Appended the same way when the child used up its CPU-time rlimit, which counts the CPU of
#: all its threads: two busy threads reach it in half the wall time, long before the deadline,
#: and the kernel's SIGKILL (``exit_code -9``, ``timed_out`` False) said nothing either.
CPU_MARK = "\n[killed: at the sandbox's CPU-time limit ({limit} s of CPU, all its threads together)]\n"
#: Characters the notes after capped output take at most (the marks above, with the limit).
NOTE_ROOM = 1024
#: Bytes of a stream's output kept by default (Coding's and Git's ``output_limit``).
OUTPUT_LIMIT = 65536
#: Characters of output an observation's text field holds (Coding's stdout/stderr, Git's output).
MAX_OUTPUT_TEXT = 1 << 20


def check_output_limit(output_limit: int, max_text: int = MAX_OUTPUT_TEXT) -> None:
    """Refuse an ``output_limit`` (bytes kept per stream) whose text, with the notes appended
    to capped output, would not fit an observation field of ``max_text`` characters (the first
    step that printed that much failed its observation, and its result was lost).

    Raises:
        ValueError: It is not 1..``max_text - NOTE_ROOM``.
    """
    if not is_int(output_limit, 1, max_text - NOTE_ROOM):
        raise ValueError(f"output_limit must be 1..{max_text - NOTE_ROOM} bytes (the observation "
                         f"holds {max_text} characters of output), got {output_limit}")


#: A child may write this many times the cap (then dropped) before it is killed.
FLOOD_FACTOR = 64

_RLIMITS: dict[str, int] = {
    "cpu_seconds": resource.RLIMIT_CPU,
    "memory_bytes": resource.RLIMIT_AS,
    "file_size_bytes": resource.RLIMIT_FSIZE,
    "processes": resource.RLIMIT_NPROC,
    "open_files": resource.RLIMIT_NOFILE,
}
#: The largest rlimit value a child can set (``setrlimit`` takes a C long long).
_MAX_RLIMIT = 2**63 - 1
_ULIMIT_FLAGS: dict[str, tuple[str, int]] = {  # name -> (bash flag, unit divisor)
    "cpu_seconds": ("-t", 1),
    "memory_bytes": ("-v", 1024),
    "file_size_bytes": ("-f", 1024),
    "processes": ("-u", 1),
    "open_files": ("-n", 1),
}


@dataclass(frozen=True)
class Limits:
    """Resource limits of one child process (``None`` leaves a limit as inherited).

    Args:
        cpu_seconds: CPU time (RLIMIT_CPU).
        memory_bytes: Address space (RLIMIT_AS).
        file_size_bytes: Largest file the child may write (RLIMIT_FSIZE).
        processes: Processes the child's user may own (RLIMIT_NPROC). The kernel counts
            every process of the user, so this is an *extra* budget added to the count of
            the user's processes visible when the child starts. Root ignores it.
        open_files: Open file descriptors (RLIMIT_NOFILE).

    Example:
        >>> Limits(cpu_seconds=2, memory_bytes=None, file_size_bytes=None, processes=None,
        ...        open_files=64).shell_prefix()
        'ulimit -t 2 -n 64 2>/dev/null'
    """

    cpu_seconds: int | None = 10
    memory_bytes: int | None = 1 << 30
    file_size_bytes: int | None = 16 << 20
    processes: int | None = 64
    open_files: int | None = 256

    @classmethod
    def merged(cls, overrides: Mapping[str, int | None] | None, **defaults: int | None) -> "Limits":
        """An env's limits: the class defaults, then the env's ``defaults``, then the user's.

        Raises:
            ValueError: ``overrides`` names a limit that does not exist.

        Example:
            >>> Limits.merged({"open_files": 64}, processes=128).processes
            128
        """
        known = [f.name for f in fields(cls)]
        if overrides is not None and not isinstance(overrides, Mapping):
            raise ValueError(f"limits must be a dict of {known} to an int or None, got {overrides!r}")
        unknown = sorted(set(overrides or {}) - set(known), key=repr)
        if unknown:
            raise ValueError(f"unknown limits {unknown}; known: {known}")
        values = {**defaults, **(overrides or {})}
        for name, value in values.items():
            # A negative rlimit reads as RLIM_INFINITY (no limit at all), a float or str fails
            # in every child: refuse them here, where the caller can still fix them.
            if value is not None and not is_int(value, 1, _MAX_RLIMIT):
                raise ValueError(f"limit {name} must be a whole number 1..{_MAX_RLIMIT} (or None: "
                                 f"inherited), got {value!r}")
        return cls(**{k: None if v is None else int(v) for k, v in values.items()})

    def resolved(self) -> dict[str, int]:
        """The absolute limits to set now (the process budget turned into an RLIMIT_NPROC)."""
        out = {k: v for k, v in asdict(self).items() if v is not None}
        if "processes" in out:
            out["processes"] += _user_process_count()
        return out

    def shell_prefix(self) -> str:
        """A bash ``ulimit`` command that applies the limits to the shell and its children."""
        parts = []
        for name, value in asdict(self).items():
            if value is None:
                continue
            flag, unit = _ULIMIT_FLAGS[name]
            if name == "processes":
                value += _user_process_count()
            parts.append(f"{flag} {max(1, value // unit)}")
        # A limit above the inherited hard limit fails; the rest still apply.
        return "ulimit " + " ".join(parts) + " 2>/dev/null" if parts else ":"


def step_timeouts(step_timeout: float, max_timeout: float) -> tuple[float, float]:
    """An env's default and largest per-step timeouts, checked (``0 < step <= max``).

    Example:
        >>> step_timeouts(10, 60)
        (10.0, 60.0)
    """
    for name, value in (("step_timeout", step_timeout), ("max_timeout", max_timeout)):
        if not is_finite(value):
            raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
    if not 0 < step_timeout <= max_timeout:
        raise ValueError(f"need 0 < step_timeout <= max_timeout, got {step_timeout} and {max_timeout}")
    return float(step_timeout), float(max_timeout)


def _user_process_count() -> int:
    """Tasks the kernel counts against this user's RLIMIT_NPROC: every thread of every
    process of the user, not just the processes (a trainer with torch's or a browser's
    threads holds hundreds), or the budget added on top would leave a child no fork at all."""
    uid = os.getuid()
    count = 0
    try:
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        # /proc/PID/task links one entry per thread, plus . and ..
                        count += max(1, os.stat(f"/proc/{entry.name}/task").st_nlink - 2)
                except OSError:
                    pass
    except OSError:
        return 0
    return count


@dataclass
class ExecResult:
    """What a child did.

    Attributes:
        stdout: Captured standard output (capped; decoded as UTF-8 with replacement).
        stderr: Captured standard error (empty when merged into stdout).
        exit_code: The exit status; ``-N`` when killed by signal N.
        timed_out: Killed at the wall-clock deadline.
        wall_time: Seconds from start to exit.
        truncated: Some output went past the cap and was dropped.
        oom_killed: The kernel's OOM killer ended it at its memory cgroup's limit (stderr,
            or stdout when merged, ends with :data:`OOM_MARK`).
        cpu_killed: The kernel ended it at its CPU-time rlimit (stderr, or stdout when
            merged, ends with :data:`CPU_MARK`).
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    timed_out: bool = False
    wall_time: float = 0.0
    truncated: bool = False
    oom_killed: bool = False
    cpu_killed: bool = False


@dataclass(eq=False)  # identity matters: selectors compare the data they hold
class _Stream:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        out = self.data.decode("utf-8", errors="replace")
        return out + TRUNCATION_MARK.format(limit=self.limit) if self.dropped else out


#: What a child's full-screen Vim (``vi``, ``view``, ``vimdiff``; ``git mergetool``/``difftool``
#: start it) does with no terminal: it reads its keys from stderr when stdin is not a terminal,
#: and a child's stderr is the output pipe, which never has any, so it waited out the whole
#: step (and printed a screenful of escape codes). It quits at once with a message instead
#: (exit 1, after Vim's own 2 s warning). Ex mode (``vim -e``, ``vim -es``, ``ex``), whose
#: commands come from stdin, and ``vim -c CMD -c wq`` run as before, with the defaults Vim
#: loads when there is no vimrc. The message avoids the characters ``:!`` expands (%, #, !):
#: its ex command is ``g/old/s//new/`` (every line, as sed's), not ``%s``; a bare ``s/old/new/``
#: edits only the last line in ex mode (and fails, writing nothing, when that line has no match).
#: What to use where an interactive editor cannot run (Vim's message here, ``ed``'s below).
EDIT_INSTEAD = ("Edit files with commands instead: sed -i s/old/new/ FILE, cat > FILE with a "
                "here-document, or vim -es -c g/old/s//new/ -c wq FILE.")
VIM_NO_TERMINAL = ("vim: there is no terminal here, so vim cannot be used interactively (it would "
                   "wait for keys until the step times out). " + EDIT_INSTEAD)
VIMINIT = ("silent! source $VIMRUNTIME/defaults.vim | autocmd VimEnter * if !has('ttyin') && "
           f"mode() ==# 'n' | execute \"silent !echo '{VIM_NO_TERMINAL}' >&2\" | cquit | endif")

#: Programs that cannot work in a confined child (:mod:`~openenv_gym.envs._confine`), whose own
#: error misleads, by the folder each needs: it says why instead, and what to use. ``ed`` keeps
#: its buffer in an unnamed file in ``/tmp``: the C library's ``tmpfile()``, which ignores
#: TMPDIR (every child has a private one, which the programs that honour it use), so ``ed``
#: said only "Permission denied". ``/tmp`` stays closed: it holds the worker's other
#: sandboxes and the git server's folders, and on the host other programs' files. The process
#: tools read ``/proc``, closed because it shows the worker's environment (the trainer's, API
#: keys included); ``top`` and ``ps`` said "Error, do this: mount -t proc proc /proc",
#: ``pgrep`` found nothing. No single quote in a message (it is quoted in one).
NO_TMP = ("{name}: {name} keeps its buffer in a scratch file in /tmp (the C library tmpfile, which "
          "ignores TMPDIR), and sandboxed code may not write /tmp, so {name} cannot start here. "
          + EDIT_INSTEAD + " (ex takes commands as ed does.)")
NO_PROC = ("{name}: sandboxed code may not read /proc (it would show the worker and its environment), "
           "so {name} cannot work here. The processes of this command: jobs -l and kill %1 (bash "
           "builtins); everything a step starts ends with it.")
NEEDS = {**{name: ("/tmp", NO_TMP) for name in ("ed", "red")},
         **{name: ("/proc/self/stat", NO_PROC) for name in ("top", "ps", "free", "uptime", "vmstat", "w",
                                                            "pgrep", "pkill", "pidof", "pmap")}}
#: bash functions, exported as bash imports them (``BASH_FUNC_name%%``), that stand in for those
#: programs: each says why the program cannot run when it cannot open what it needs, and runs
#: the program otherwise (no Landlock, ``confine=False``); a program that is not installed
#: stays "command not found". Git-v0's commands have them (every bash they start); ``sh``
#: (dash) and programs started without a shell do not. Coding's Python children do not get
#: them: ~4.5 KB of function text in an environment an agent may print.
NO_SANDBOX_FUNCTIONS = {
    f"BASH_FUNC_{name}%%": (f"() {{ if type -P {name} >/dev/null && ! {{ : < {path}; }} 2>/dev/null; then "
                            f"echo '{message.format(name=name)}' >&2; return 1; fi; command {name} \"$@\"; }}")
    for name, (path, message) in NEEDS.items()
}


def minimal_environ(**extra: str) -> dict[str, str]:
    """A small, predictable environment for a child (no secrets of the worker leak in).

    Args:
        **extra: Variables to add or override.
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR": extra.get("HOME", "/tmp"),
        "VIMINIT": VIMINIT,
    }
    env.update(extra)
    return env


def _first_for_the_oom_killer(pid: int) -> None:
    """Make ``pid`` the OOM killer's first choice (``oom_score_adj`` 1000, which a process
    may raise without privilege; what it forks inherits it).

    The worker and its children share one memory limit (the worker's cgroup, a container's
    ``mem_limit``), and the OOM killer takes the largest process: code that spreads its
    memory over processes each smaller than the worker (~40 MB) had the worker killed,
    and with it every session it hosted, instead of one of its own. Set before the
    child's code runs (it is still starting its interpreter); on no ``/proc``, nothing.
    """
    try:
        with open(f"/proc/{pid}/oom_score_adj", "wb", buffering=0) as f:
            f.write(b"1000")
    except OSError:
        pass


@functools.cache
def _memory_cgroup(pid: int) -> "WorkerCgroup | None":
    """The memory cgroup process ``pid`` (this one: the key only tells a fork apart) is in, or
    None. Looked up once per process: a worker is put in its cgroup before it runs anything,
    and its sandbox children inherit it."""
    from openenv_gym.providers._cgroup import WorkerCgroup, own_folders

    try:
        folders = own_folders()
    except OSError:
        return None
    folder = folders.get("memory", folders.get(""))
    return WorkerCgroup("v2" if "" in folders else "v1", {"memory": folder}) if folder else None


class _OomWatch:
    """The OOM kills of the memory cgroup this process (and so each child it starts) is in:
    the worker's own on the process provider as root, the container's on the docker provider.

    A child the OOM killer ends exits with SIGKILL, as one killed at its deadline does; only
    the cgroup's count (v1 ``memory.oom_control``, v2 ``memory.events``: ``oom_kill``)
    tells them apart. Where there is no such cgroup (no ``/sys/fs/cgroup``, v2's root) the
    count stays 0 and no note is ever added.
    """

    def __init__(self) -> None:
        self._group = _memory_cgroup(os.getpid())
        self.before = self.count()

    def count(self) -> int:
        """OOM kills in the cgroup so far (0 without one)."""
        return self._group.oom_kills() if self._group is not None else 0

    def mark(self) -> str:
        """:data:`OOM_MARK` with the cgroup's limit in MiB, where it has one."""
        limit = self._group.limit("memory") if self._group is not None else None
        return OOM_MARK.format(limit=f" ({limit >> 20} MiB)" if limit is not None else "")


#: What :func:`held_start` writes to open a gate, and the status a held child exits with
#: when its gate closes unopened instead (it ran nothing it was given).
_GATE_OPEN, _GATE_CLOSED = b"\n", 125


def gate_line(fd: int) -> str:
    """The first line of a bash script held at the gate ``fd``: it reads a line from the
    descriptor (the worker writes it: :func:`held_start`), closes it, and goes on;
    it exits if the descriptor closes instead. bash: dash takes single-digit descriptors."""
    return f"read -r _ <&{fd} || exit {_GATE_CLOSED}\nexec {fd}<&-\n"


def _gate_source(fd: int) -> str:
    """:func:`gate_line` for ``python -I -S -c`` (:func:`python_argv`): the interpreter's
    first statements (``posix`` is built in and already loaded: no import is paid)."""
    return (f"import posix as _p\nif _p.read({fd}, 1) != {_GATE_OPEN!r}:\n"
            f"    raise SystemExit({_GATE_CLOSED})\n_p.close({fd})\ndel _p\n")


def _apart(fd: int, passed: Sequence[int]) -> int:
    """A duplicate of ``fd`` (close-on-exec) that is adjacent to no descriptor a child will
    keep, or ``fd`` itself when there is no room for one.

    CPython 3.11's ``close_fds`` closes what a child must not inherit with ``close_range``
    between the descriptors it keeps; two adjacent kept descriptors give it an empty range,
    and it falls back to listing ``/proc/self/fd``, which a confined child may not read, and
    then to closing every number up to the descriptor limit one by one (20,000 calls, ~4 ms
    per child here). A gate made right after the caller's own pipes was adjacent to one of
    them. The duplicate sits above every descriptor in use and above ``passed``, with room
    below for the pipes ``subprocess`` makes (the lowest free numbers).
    """
    try:
        in_use = len(os.listdir("/proc/self/fd"))  # the lowest free number is at most this
    except OSError:
        return fd
    above = max(in_use + 16, max(passed, default=0) + 2)
    if above >= resource.getrlimit(resource.RLIMIT_NOFILE)[0]:
        return fd
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above)


def held_start(start: Callable[[int], T], spawn: Callable[[Callable[[], T]], T] | None = None,
               passed: Sequence[int] = ()) -> T:
    """Start a child held at a gate, and open the gate once ``spawn`` returned.

    Args:
        start: Starts the child with the gate's read end, which the child reads a line from
            before it runs anything it was given (``bash -c`` with :func:`gate_line`,
            :func:`python_argv` with ``gate``).
        spawn: How ``start`` is called (:meth:`~._confine.Ruleset.spawn_alone`: from a
            thread that has ended when it returns); None: directly.
        passed: The other descriptors the child keeps (``pass_fds``): the gate is kept
            apart from them (see :func:`_apart`).

    Returns:
        What ``start`` returned.
    """
    read, write = os.pipe()
    try:
        moved = _apart(read, passed)
        if moved != read:
            os.close(read)
            read = moved
        child = spawn(lambda: start(read)) if spawn is not None else start(read)
        os.close(read)
        read = -1
        try:
            os.write(write, _GATE_OPEN)
        except BrokenPipeError:
            pass  # it died before reading: its result says how
        return child
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)


class Child:
    """A running child in its own session whose output is collected with a cap.

    Args:
        argv: The command.
        cwd: Working directory.
        env: Its whole environment (see :func:`minimal_environ`).
        output_limit: Bytes kept per stream.
        merge_stderr: Send stderr into stdout (one stream, like a terminal).
        pass_fds: Extra descriptors the child inherits.
        confine: Landlock rules the child (and all it starts) is held to.
        held: ``argv`` is a function of a gate descriptor that gives a command which reads
            a line from it before it runs anything it was given (an agent's commands:
            :func:`gate_line`; Python children: :func:`python_argv` with ``gate``). The
            child is started from a thread of its own, and the line written once that
            thread has ended (:func:`held_start`): a child that runs code it was given must
            be held, so that its Landlock domain holds no thread of the worker when that
            code runs (see :meth:`~._confine.Ruleset.spawn_alone`).
    """

    def __init__(self, argv: Sequence[str] | Callable[[int], Sequence[str]], *, cwd: str | None = None,
                 env: Mapping[str, str] | None = None, output_limit: int = OUTPUT_LIMIT,
                 merge_stderr: bool = False, pass_fds: Sequence[int] = (),
                 confine: Ruleset | None = None, held: bool = False) -> None:
        self.output_limit = output_limit
        self.merge_stderr = merge_stderr
        self._oom = _OomWatch()  # counted before the child exists: its kill is after
        self.started = time.monotonic()

        def start(gate: int | None = None) -> subprocess.Popen:
            # The command is built here, in the calling thread: the thread spawn_alone starts
            # has confined itself, and what a command reads of the machine when it is built
            # (python_argv's count of the user's tasks, on which the process budget sits) must
            # be the worker's view, not a Landlock domain's (it saw fewer: 6 forks less).
            command = list(argv(gate) if gate is not None else argv)  # type: ignore[operator]
            fds = (*pass_fds, *([gate] if gate is not None else []))
            return spawn(lambda: subprocess.Popen(
                command, cwd=cwd, env=dict(env) if env is not None else minimal_environ(),
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                start_new_session=True, pass_fds=fds, close_fds=True))

        def spawn(begin: Callable[[], subprocess.Popen]) -> subprocess.Popen:
            with _spawn_lock:  # a sweep for orphans must not take a child not yet in _live for one
                if confine is None:
                    self.proc = begin()
                else:
                    self.proc = confine.spawn_alone(begin) if held else confine.spawn(begin)
                self.pid = self.proc.pid
                _live.add(self)
            _first_for_the_oom_killer(self.pid)  # before a held child runs anything
            return self.proc

        if held:
            held_start(start, passed=pass_fds)  # start calls spawn, from the thread held_start is called in
        else:
            start()
        self.out = _Stream(output_limit)
        self.err = _Stream(output_limit)
        self._sel = selectors.DefaultSelector()
        for pipe, stream in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            if pipe is not None:
                os.set_blocking(pipe.fileno(), False)
                self._sel.register(pipe, selectors.EVENT_READ, stream)
        # The child's exit wakes the selector too. Without it, a child whose pipes have
        # closed but that is not yet reapable (its pipes close before it becomes a zombie)
        # left pump() sleeping in an empty selector: measured, ~26 ms lost per git call.
        self._pidfd = _pidfd_open(self.pid)
        if self._pidfd >= 0:
            self._sel.register(self._pidfd, selectors.EVENT_READ, None)
        self.flooded = False
        self.result: ExecResult | None = None
        self._end_signal = 0  # the signal that ended the child by itself, once exited() saw it

    def watch(self, fd: int, limit: int = 65536) -> "_Stream":
        """Also collect a descriptor of the parent's (a status pipe) while pumping.

        Returns:
            The buffer its bytes accumulate in (``.data``).
        """
        stream = _Stream(limit)
        os.set_blocking(fd, False)
        self._sel.register(fd, selectors.EVENT_READ, stream)
        return stream

    def reset_output(self) -> None:
        """Forget the output collected so far (a persistent child between requests)."""
        self.out = _Stream(self.output_limit)
        self.err = _Stream(self.output_limit)
        for key in list(self._sel.get_map().values()):
            if key.fileobj is self.proc.stdout:
                self._sel.modify(key.fileobj, selectors.EVENT_READ, self.out)
            elif key.fileobj is self.proc.stderr:
                self._sel.modify(key.fileobj, selectors.EVENT_READ, self.err)
        self.flooded = False
        self._oom.before = self._oom.count()  # an earlier request's OOM kill is not this one's

    def snapshot(self, exit_code: int = 0) -> ExecResult:
        """The output collected so far, for a child that keeps running."""
        return ExecResult(stdout=self.out.text(), stderr=self.err.text(), exit_code=exit_code,
                          wall_time=time.monotonic() - self.started,
                          truncated=bool(self.out.dropped or self.err.dropped))

    def exited(self) -> bool:
        """Whether the child has exited, without reaping it (its pid stays reserved)."""
        if self.result is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        if info is None or info.si_pid != self.pid:
            return False
        if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            self._end_signal = info.si_status
        return True

    def pump(self, deadline: float, until: Callable[[], bool] | None = None) -> bool:
        """Read output until the child exits, ``until()`` is true, or the deadline passes.

        Returns:
            True when it stopped because of the exit or ``until``; False at the deadline.
        """
        while True:
            if until is not None and until():
                self.drain()
                return True
            if self.exited():
                self.drain()
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            self._read(min(deadline - now, 0.05))
            if self.out.dropped + self.err.dropped > FLOOD_FACTOR * self.output_limit:
                self.flooded = True
                return True

    def _read(self, wait: float) -> bool:
        got = False
        for key, _ in self._sel.select(wait):
            if key.data is None:
                continue  # the pidfd: the child has exited, which the caller checks next
            try:
                chunk = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if chunk:
                key.data.add(chunk)
                got = True
            else:
                self._sel.unregister(key.fileobj)
        return got

    def drain(self) -> None:
        """Read what is already in the pipes without waiting."""
        while self._sel.get_map() and self._read(0):
            pass

    def kill(self) -> None:
        """SIGKILL the child's whole process group (safe: the leader is not reaped yet)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self, timed_out: bool = False) -> ExecResult:
        """Kill what is left of the group, reap the child and return the result (once)."""
        if self.result is not None:
            return self.result
        ended_itself = self.exited()  # before our SIGKILL, which would pass for the OOM killer's
        # Read off the exited child before it is reaped (a zombie keeps both); only the two
        # signals the kernel sends at RLIMIT_CPU can mean it was reached.
        cpu_limit = (_cpu_limit_reached(self.pid)
                     if ended_itself and self._end_signal in (signal.SIGKILL, signal.SIGXCPU) else None)
        self.kill()  # also stops background processes it left behind
        code = self.proc.wait()
        _live.discard(self)
        reap_orphans()  # and those that left its group (setsid), if this worker adopts them
        wall = time.monotonic() - self.started
        self.drain()
        for key in list(self._sel.get_map().values()):
            self._sel.unregister(key.fileobj)
        self._sel.close()
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        stdout, stderr = self.out.text(), self.err.text()
        if self.flooded:  # on the stream that flooded (stdout where stderr is merged into it)
            if self.out.dropped >= self.err.dropped:
                stdout += FLOOD_MARK
            else:
                stderr += FLOOD_MARK
        # A SIGKILL none of ours (the deadline, a flood, the kill above), while the cgroup's
        # OOM kill count rose. The count is the whole worker's: a child that SIGKILLed itself
        # just as another session's child was OOM-killed would get the note too (no cgroup
        # per child tells them apart).
        oom_killed = (ended_itself and code == -signal.SIGKILL and not timed_out and not self.flooded
                      and self._oom.count() > self._oom.before)
        # The kernel's kill at RLIMIT_CPU: SIGKILL at the hard limit (ours equal the soft one),
        # SIGXCPU at a lower soft one.
        cpu_killed = (cpu_limit is not None and code in (-signal.SIGKILL, -signal.SIGXCPU)
                      and not timed_out and not self.flooded and not oom_killed)
        note = self._oom.mark() if oom_killed else CPU_MARK.format(limit=cpu_limit) if cpu_killed else ""
        if self.merge_stderr:
            stdout += note
        else:
            stderr += note
        self.result = ExecResult(stdout=stdout, stderr=stderr, exit_code=code,
                                 timed_out=timed_out, wall_time=wall,
                                 truncated=bool(self.out.dropped or self.err.dropped),
                                 oom_killed=oom_killed, cpu_killed=cpu_killed)
        return self.result


def _cpu_limit_reached(pid: int) -> int | None:
    """The CPU-time rlimit of the exited, not yet reaped child ``pid`` if its CPU time (all its
    threads, not its children's) reached it, else None."""
    try:
        limit = resource.prlimit(pid, resource.RLIMIT_CPU)[1]
        # The kernel holds RLIMIT_CPU against the process's PROF clock (user + system time in
        # whole ticks). /proc's utime and stime are scaled to the scheduler's exact runtime, which
        # on a busy shared CPU reads up to ~10% less: kills at the limit went unnamed.
        used = time.clock_gettime(_prof_clock(pid))
    except OSError:
        return None
    if limit == resource.RLIM_INFINITY:
        return None
    return limit if used >= limit - 0.01 else None


def _prof_clock(pid: int) -> int:
    """The clock id of process ``pid``'s PROF CPU clock: Linux's ``MAKE_PROCESS_CPUCLOCK(pid,
    CPUCLOCK_PROF)`` (``clock_getcpuclockid`` gives only the scheduler's clock)."""
    return (~pid << 3) | 0


def _pidfd_open(pid: int) -> int:
    """A descriptor that becomes readable when ``pid`` exits (Linux 5.3+), or -1."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


#: Children not finished yet (see :func:`kill_all`).
_live: "weakref.WeakSet[Child]" = weakref.WeakSet()
_spawn_lock = threading.Lock()
#: Whether this process is the subreaper of its children's orphans (:func:`adopt_orphans`).
_adopting = False


def adopt_orphans() -> bool:
    """Make this process the reaper of every orphan among its descendants (Linux 3.4+).

    A daemon that leaves its step's process group (double fork and ``setsid``) would be
    adopted by init and outlive the step. A worker process calls this once at start; from
    then on such a daemon is re-parented to the worker, and :func:`reap_orphans` (run
    after every step) kills it. Only worker processes call it: in a trainer it would adopt
    the orphans of unrelated tools.

    Returns:
        Whether the kernel agreed.
    """
    global _adopting
    _adopting = prctl(PR_SET_CHILD_SUBREAPER, 1)
    return _adopting


def reap_orphans() -> int:
    """SIGKILL and reap the orphans this worker adopted; returns how many were killed.

    An orphan is a child of the worker's main thread (where the kernel re-parents them)
    that this module is not running as a step and that lives in another session than the
    worker: so the worker's own helpers (the git server's ``http-backend``) are never
    touched, nor a process still in the group of a running step.

    Sweeps again until one finds no orphan at all: an orphan re-parents its own children
    (a daemon that left the group of a process the step's group kill had not finished
    off yet) to the worker only once it has died, and a killed process with a large heap
    to unmap takes longer than one sweep waits for it: those children are orphans of a
    later sweep. Gives up when a second passes with no orphan dying or appearing (one stuck
    in the kernel, which runs no code), and after 10 s whatever happens.
    """
    if not _adopting:
        return 0
    killed: set[int] = set()
    last: set[int] = set()
    now = time.monotonic()
    stalled, give_up = now + 1.0, now + 10.0
    while True:
        found = _sweep_orphans()  # the killed ones not reaped yet are found again
        killed |= found
        now = time.monotonic()
        if not found or now > give_up:
            return len(killed)
        if found != last:
            last, stalled = found, now + 1.0
        elif now > stalled:
            return len(killed)


def _sweep_orphans() -> set[int]:
    """One pass of :func:`reap_orphans`: kill and reap the orphans adopted by now; their pids."""
    pids = own_children()
    if not pids:
        return set()
    own_session = os.getsid(0)
    orphans: list[int] = []
    with _spawn_lock:
        steps = {child.pid for child in _live}
        for pid in pids:
            try:
                group = os.getpgid(pid)
                if pid in steps or group in steps or os.getsid(pid) == own_session:
                    continue
                end_orphan(pid)
            except (ProcessLookupError, PermissionError):
                continue
            orphans.append(pid)
    killed = set(orphans)
    # Reap them (a SIGKILLed process dies at once unless stuck in the kernel; one that is
    # stays a zombie until the next sweep rather than hold up the step).
    deadline = time.monotonic() + 0.1
    while orphans and time.monotonic() < deadline:
        for pid in list(orphans):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    orphans.remove(pid)
            except ChildProcessError:
                orphans.remove(pid)
        if orphans:
            time.sleep(0.002)
    return killed


def kill_all() -> int:
    """SIGKILL the process group of every child still running; returns how many.

    A worker that shuts down (its owner died, or it was told to stop) calls this first:
    children live in sessions of their own, so they would otherwise outlive the worker,
    and a step in flight would keep the shutdown waiting for its timeout.
    """
    children = list(_live)
    for child in children:
        child.kill()
    return len(children)


def run(argv: Sequence[str] | Callable[[int], Sequence[str]], *, timeout: float, cwd: str | None = None,
        env: Mapping[str, str] | None = None, output_limit: int = OUTPUT_LIMIT,
        merge_stderr: bool = False, pass_fds: Sequence[int] = (),
        confine: Ruleset | None = None, held: bool = False) -> ExecResult:
    """Run a command to completion or until its wall-clock deadline.

    Args:
        argv: The command (limits are the caller's prelude: see :class:`Limits`).
        timeout: Wall-clock seconds; then the whole process group is killed.
        cwd: Working directory.
        env: Its whole environment (default :func:`minimal_environ`).
        output_limit: Bytes kept per stream.
        merge_stderr: Send stderr into stdout.
        pass_fds: Extra descriptors the child inherits.
        confine: Landlock rules the child is held to.
        held: See :class:`Child`.

    Returns:
        The :class:`ExecResult`.

    Raises:
        OSError: The command could not be started (missing executable, bad cwd).
    """
    child = Child(argv, cwd=cwd, env=env, output_limit=output_limit, merge_stderr=merge_stderr,
                  pass_fds=pass_fds, confine=confine, held=held)
    finished = child.pump(child.started + timeout)
    return child.finish(timed_out=not finished)


def python_argv(prelude_limits: Limits, script: str, *args: str, gate: int | None = None) -> list[str]:
    """``python -I -S -c`` that waits at ``gate`` (a descriptor: :class:`Child` with
    ``held``) if given, applies ``prelude_limits`` and then runs ``script``.

    The script sees ``sys.argv[1:] == args``; one interpreter start, no files. ``-S`` skips
    the ``site`` module, whose ``.pth`` hooks (editable installs, certificate shims) took
    39 of the 40 ms an interpreter start cost here; the site-packages folders are put on
    ``sys.path`` directly, so installed packages still import, and ``exit()``/``quit()``
    and ``help()`` are defined as ``site`` would (``_sitebuiltins`` is frozen: no file read).
    """
    pairs = [(_RLIMITS[k], v) for k, v in prelude_limits.resolved().items()]
    # The hard limit too, as bash's ``ulimit`` sets it: under a soft limit alone the code raised
    # it back up to an inherited finite hard one (open files 256 -> 20000, the process budget
    # to the user's whole hard RLIMIT_NPROC: no fork bound left where there is no cgroup).
    prelude = ("import resource as _r, sys as _s, builtins as _b\n"
               f"for _w, _v in {pairs!r}:\n"
               "    _h = _r.getrlimit(_w)[1]\n"
               "    _v = _v if _h == _r.RLIM_INFINITY else min(_v, _h)\n"
               "    _r.setrlimit(_w, (_v, _v))\n"
               f"_s.path.extend({site_folders()!r})\n"
               "def _quit(code=None):\n"
               "    raise SystemExit(code)\n"
               "_b.exit = _b.quit = _quit\n"
               "import _sitebuiltins as _h\n"
               "_b.help = _h._Helper()\n"
               "del _r, _s, _b, _quit, _h\n")
    first = _gate_source(gate) if gate is not None else ""
    return [sys.executable, "-I", "-S", "-c", first + prelude + script, *args]
