"""The fork server: one process that has imported the worker code and forks each new worker.

A worker started as ``python -m openenv_gym.server`` spends most of its start-up (~0.3 s on
a 2-core machine) in the interpreter and in imports: numpy, gymnasium, the server. The
process provider pays that once per trainer instead: it starts this process, which imports
what every worker imports, then forks one child per worker request; the child runs the very
:func:`openenv_gym.server.main.main` a spawned worker runs, with the worker's arguments. This
is multiprocessing's ``forkserver`` idea, applied to our workers.

The server runs no Python thread of its own (forking one that holds a lock would deadlock the
child; numpy's BLAS pool re-forms itself across a fork). For the same reason it does not
preload env-specific modules: cv2 and pandas start native threads on import, so each worker
still loads its own (ale-py for Atari: ~120 ms of its ~250 ms start). It talks to its owner over
one ``SOCK_SEQPACKET`` socket (one JSON message per packet), reaps its children and keeps
their exit statuses until the owner asks. It exits when the owner closes the socket or dies;
workers outlive it only until they notice their owner is gone (``--owner-pid``).

The server is the subreaper of its workers' descendants: what a worker killed mid-step
(SIGKILL, an OOM kill) leaves running, its step's child in a session of its own, is
re-parented to the server, which ends it within a second (where no cgroup holds the worker,
nothing else would).

A worker that cannot notice (stopped, or hung in native code) is ended by the server's
clean-up once the owner is gone. When the server is killed with its owner (Ray ends an
actor and its direct children, the server among them), a sentinel does that instead: a
process the server starts first, detached (so not the owner's child), which waits on a pipe
to the server. A byte means the server ended on its own with nothing left to do (its owner
said goodbye, or it cleaned up after it); end of file without one means it was killed (or
found its owner still there when the socket closed), and the sentinel then waits for the
owner to be gone and sweeps what dead owners left (their workers' cgroups, with any hung
worker in them, and their folders).

Requests and replies:

- ``{"op": "fork", "argv": [...], "log": path, "cwd": path}`` → ``{"pid": N}`` with a pidfd
  of the child attached (``SCM_RIGHTS``), so the owner can signal and wait on it without
  racing a reused pid; or ``{"error": text}``.
  With ``"untrusted": true`` (an env whose steps run child processes: Coding, Git) the
  server first imports what such a worker needs for them (:mod:`openenv_gym.envs._exec`,
  ~20 ms), once, so that this worker and every later one inherit it; the other workers
  (Echo, Gym, Atari) never load it, nor pay for it on a trainer's first worker.
  With ``"hold": true`` the child waits, before running any worker code, until
  ``{"op": "release", "pid": N}``: the owner first puts it in its cgroup, so nothing the
  worker starts can begin outside.
- ``{"op": "status", "pid": N}`` → ``{"status": wait status}`` once that child was reaped,
  ``{"status": null}`` while it runs.
- ``{"op": "bye"}`` (no reply): the owner stops the server. A socket closed without it means
  the owner died, maybe while a worker was starting; the server then removes the folders and
  cgroups such a worker would have left (:func:`_clean_up_after`).

Run by :mod:`openenv_gym.providers._forks`, never by hand:
``python -m openenv_gym.server.forkserver --fd FD --owner-pid PID --room SPACES``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from typing import Any, Callable

__all__ = ["serve"]

#: Largest message either side sends (argv carries the env kwargs as JSON); it must fit one
#: packet of the socket's send buffer (~200 KB by default).
MAX_MESSAGE = 64 << 10


def serve(sock: socket.socket, owner_pid: int) -> None:
    """Answer fork, release and status requests on ``sock`` until the owner goes away.

    Args:
        sock: The server's end of the socket pair.
        owner_pid: The process that started the server (its parent).
    """
    sentinel = _start_sentinel(sock, owner_pid)
    done = False
    try:
        server = _Server(sock, sentinel)
        try:
            told = server.run(owner_pid)
        except (BrokenPipeError, ConnectionResetError):
            told = False  # the owner went away mid-request
        done = told or _clean_up_after(owner_pid, server)
        server.end_adopted()  # none may outlive the server: init would adopt it
    finally:
        # Said goodbye, or cleaned up after a dead owner: the sentinel has nothing to do.
        # Otherwise (the owner seemed to live on, or this server failed) it gets end of file
        # without the byte, and sweeps once the owner is gone: an owner whose socket closed
        # while it was still dying (a slow exit) would else leave a hung worker behind.
        # A sentinel already gone (killed) leaves no reader, and its EPIPE must not turn a
        # clean exit into a traceback on the owner's stderr (or hide what ended the server).
        if done:
            with contextlib.suppress(OSError):
                os.write(sentinel, b"e")
        os.close(sentinel)


#: How long the sentinel lets running workers clean up after their dead owner themselves
#: before it sweeps (as the server's own clean-up waits for its children).
SENTINEL_GRACE = 10.0


def _start_sentinel(sock: socket.socket, owner_pid: int) -> int:
    """Start the sentinel (see the module's docstring); returns the write end of its pipe,
    which only this server may hold."""
    from openenv_gym.providers._docker_owner import process_start

    start = process_start(owner_pid)
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(read)
        os.waitpid(pid, 0)  # the intermediate child, gone at once: the sentinel is nobody's child
        return write
    code = 1
    try:
        os.close(write)
        sock.close()
        os.setsid()  # a signal to the owner's process group spares it
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # whoever reads the trainer's output to its end must not wait on it
            os.dup2(null, fd)
        os.close(null)
        # Named before the second fork, so it reads as the sentinel (``ps``) by the time the
        # server has reaped this child and answers its owner.
        _show_command_line([sys.executable, "-m", "openenv_gym.server.forkserver", "--sentinel",
                            "--owner-pid", str(owner_pid)])
        if os.fork() == 0:
            _watch_server(read, owner_pid, start)
        code = 0
    finally:
        os._exit(code)


def _watch_server(pipe: int, owner_pid: int, start: str) -> None:
    """The sentinel's body: once the server is killed and the owner gone, sweep."""
    from openenv_gym.providers._docker_owner import owner_alive

    if os.read(pipe, 1):
        return  # the server ended on its own, with nothing left for the sentinel to do
    while owner_alive(owner_pid, start):
        time.sleep(1.0)
    time.sleep(SENTINEL_GRACE)
    _sweep_once_reaped(owner_pid, 30.0)


def _sweep_once_reaped(owner_pid: int, timeout: float) -> None:
    """Sweep what dead owners left, once ``owner_pid`` is reaped (or ``timeout`` seconds
    passed): the sweep spares any pid that still names a process, a zombie's too."""
    deadline = time.monotonic() + timeout
    while os.path.exists(f"/proc/{owner_pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    from openenv_gym.providers._runtime import runtime_dir, sweep_orphans

    sweep_orphans(runtime_dir(sweep=False))


def _clean_up_after(owner_pid: int, server: "_Server") -> bool:
    """Once an owner that left without a goodbye is gone, remove what it left: pool folders
    and cgroups of the workers it was still starting. Returns whether it did.

    A running worker cleans up after its owner itself (``--owner-pid``); one not yet forked
    (the owner died while this server imported) or held for its cgroup never will. The
    socket also closes under an owner that lives on (a request cut short by Ctrl-C), or one
    still dying: then this server is not re-parented within 2 s, nothing is removed, and the
    sentinel is left to sweep once the owner is gone.
    """
    deadline = time.monotonic() + 2.0
    while os.getppid() == owner_pid:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    # Re-parented: the owner died. Running workers clean up after their owner themselves:
    # wait for them (this server's children), and let held ones go, so that the sweep never
    # kills a worker in the middle of its own clean-up (and leaves the cgroup it was removing).
    server.close_gates()
    server.wait_children(timeout=10.0)
    _sweep_once_reaped(owner_pid, 5.0)
    return True


class _Server:
    """The server's state: its children's exit statuses, and the gates of held children."""

    def __init__(self, sock: socket.socket, sentinel: int) -> None:
        # What every worker imports: paid here once, inherited by every fork.
        from openenv_gym.server.main import main as worker_main

        self.sock = sock
        self.sentinel = sentinel  # the sentinel's pipe: no worker may hold it
        self.worker_main = worker_main
        self.forked: set[int] = set()  # workers forked and not reaped yet
        self.exited: dict[int, int] = {}  # child pid -> wait status, until the owner asks
        self.held: dict[int, int] = {}  # child pid -> the write end of the pipe it waits on
        # After the sentinel's double fork (a subreaper would adopt the sentinel): what a
        # killed worker's children become, orphans, is re-parented here and ended (see
        # end_adopted), also where no cgroup holds the worker (a non-root trainer). The
        # prctl, not _exec.adopt_orphans: that marks the subreaper in a module global, which
        # the forked workers would inherit while the kernel does not carry the flag over.
        from openenv_gym.envs._subreaper import PR_SET_CHILD_SUBREAPER, prctl

        self.adopting = prctl(PR_SET_CHILD_SUBREAPER, 1)

    def run(self, owner_pid: int) -> bool:
        """Serve until the owner leaves; returns whether it said goodbye (``bye``)."""
        os.close(os.pidfd_open(os.getpid()))  # no pidfds (Linux < 5.3): fail now, the owner spawns
        self.sock.send(json.dumps({"ready": os.getpid()}).encode())
        handlers = {"fork": self.fork, "release": self.release, "status": self.status}
        while True:
            readable, _, _ = select.select([self.sock], [], [], 1.0)
            self.reap()
            self.end_adopted()
            if not readable:
                if os.getppid() != owner_pid:
                    return False  # re-parented: the owner died (a fork of it may hold the socket)
                continue
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except ConnectionResetError:
                return False
            if not data:
                return False  # the owner closed its end without a goodbye: it may have died
            request = json.loads(data)
            if request.get("op") == "bye":
                return True
            handler = handlers.get(request.get("op"))
            reply, fds = handler(request) if handler else ({"error": f"unknown op {request.get('op')!r}"}, [])
            try:
                socket.send_fds(self.sock, [json.dumps(reply).encode()], fds)
            finally:
                for fd in fds:
                    os.close(fd)

    def fork(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        """A new child; its pidfd goes with the reply, so the owner never signals a reused pid."""
        if request.get("untrusted"):
            _load_child_helpers()
        gate = os.pipe() if request.get("hold") else None
        try:
            pid = _fork(self.sock, request["argv"], request["log"], request["cwd"], self.worker_main,
                        gate, [self.sentinel, *self.held.values()])
        except OSError as exc:
            if gate:
                os.close(gate[1])
            return {"error": f"fork failed: {exc}"}, []
        finally:
            if gate:
                os.close(gate[0])  # the child's end
        self.forked.add(pid)
        if gate:
            self.held[pid] = gate[1]
        try:
            return {"pid": pid}, [os.pidfd_open(pid)]  # not reaped yet: the pid is still its own
        except OSError as exc:  # the owner could not watch it: it must not run
            os.kill(pid, signal.SIGKILL)
            return {"error": f"no pidfd for the worker: {exc}"}, []

    def release(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        """Let a held child run."""
        gate = self.held.pop(request["pid"], None)
        released = False
        if gate is not None:
            try:
                released = os.write(gate, b"g") == 1
            except OSError:  # it died while held (its owner stopped it): nothing to release
                pass
            os.close(gate)
        return {"released": released}, []

    def status(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        """A child's wait status, once reaped (each loop reaps before it answers)."""
        return {"status": self.exited.pop(request["pid"], None)}, []

    def close_gates(self) -> None:
        """Let every held child go: it exits unrun (its owner never released it)."""
        for gate in self.held.values():
            os.close(gate)
        self.held.clear()

    def wait_children(self, timeout: float) -> None:
        """Reap children until none is left or ``timeout`` seconds passed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return  # none left
            if pid == 0:
                self.end_adopted()
                time.sleep(0.05)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid not in self.forked:
                continue  # an adopted orphan (end_adopted): nobody asks how it ended
            self.forked.discard(pid)
            self.exited[pid] = status
            if pid in self.held:  # ended before its release (its owner stopped it)
                os.close(self.held.pop(pid))

    def end_adopted(self) -> None:
        """SIGKILL what was re-parented to this server, a subreaper: the processes a worker
        killed mid-step left running (its step's child, in a session of its own, and what
        that started), which no cgroup ends where the worker has none. Only orphans of its
        own workers reach this server; its workers themselves are never touched."""
        if not self.adopting:
            return
        from openenv_gym.envs._subreaper import end_orphans

        end_orphans(keep=self.forked)


def _load_child_helpers() -> None:
    """Import what an untrusted env's worker uses to run, confine and reap its children
    (:mod:`openenv_gym.envs._exec`, with :mod:`openenv_gym.envs._confine`), so the workers
    forked from now on inherit it. It starts no thread. Not at the server's start: a trainer's
    first worker would wait for it, and only these workers use it."""
    with contextlib.suppress(ImportError):  # the worker's own import then says what is wrong
        import openenv_gym.envs._exec  # noqa: F401


def _fork(sock: socket.socket, argv: list[str], log: str, cwd: str,
          worker_main: Callable[[list[str]], None], gate: tuple[int, int] | None,
          others: list[int]) -> int:
    """Fork a worker running ``worker_main(argv)``; returns its pid (in the server).

    With ``gate`` (a pipe) the child waits for a byte on its read end before it runs any
    worker code, and exits if the pipe closes first (the owner never released it).
    ``others`` are the server's own descriptors (the sentinel's pipe, the gates of other held
    children), which the child must not keep open.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        sock.close()  # the owner's channel is the server's alone
        for fd in others + ([gate[1]] if gate else []):
            os.close(fd)
        # As the process provider spawns workers: a session of its own (Ctrl-C in the
        # trainer's terminal does not reach it), stdin from /dev/null, output to its log.
        os.setsid()
        try:
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except FileNotFoundError:
            # The owner removed its pool folder (its start cut short by Ctrl-C): no one waits
            # for this worker, and a traceback here would reach the trainer's terminal.
            os._exit(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(null)
        os.close(out)
        os.chdir(cwd)
        numpy_random = sys.modules.get("numpy.random")
        if numpy_random is not None:
            numpy_random.seed()  # numpy's legacy global generator is not reseeded by a fork
        if gate is not None:
            released = os.read(gate[0], 1) == b"g"
            os.close(gate[0])
            if not released:
                os._exit(1)  # the owner or the server went away first
        sys.argv = ["openenv_gym.server", *argv]
        _show_command_line([sys.executable, "-m", "openenv_gym.server", *argv])
        worker_main(argv)
        code = 0
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is None:
            code = 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()  # what a worker registered; os._exit skips them
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _show_command_line(words: list[str]) -> None:
    """Make ``words`` this process's command line in ``/proc/PID/cmdline`` (``ps``, ``top``),
    so a forked worker reads as the ``python -m openenv_gym.server ...`` a spawned one is.

    A fork inherits the server's command line; this writes over it in place, as
    ``setproctitle`` does, within the room the server's ``--room`` argument reserved. The env
    kwargs (last) are cut if they do not fit.
    """
    try:
        from openenv_gym.providers._docker_owner import stat_fields

        fields = stat_fields()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (proc(5) fields 48, 49)
    except (OSError, IndexError, ValueError):
        return
    if "--env-kwargs" in words:  # the one long, free-form argument goes last
        i = words.index("--env-kwargs")
        words = words[:i] + words[i + 2:] + words[i:i + 2]
    data = b"\0".join(w.encode(errors="replace") for w in words)[:end - start - 1]
    ctypes.memmove(start, data.ljust(end - start, b"\0"), end - start)


def main() -> None:
    """Command-line entry (started by :mod:`openenv_gym.providers._forks`)."""
    parser = argparse.ArgumentParser(prog="python -m openenv_gym.server.forkserver")
    parser.add_argument("--fd", type=int, required=True, help="the server's end of the socket pair")
    parser.add_argument("--owner-pid", type=int, required=True, help="exit when this process is gone")
    parser.add_argument("--room", default="", help="blank space for the workers' command lines")
    args = parser.parse_args()
    from openenv_gym.providers._runtime import apply_trainer_path

    apply_trainer_path()  # the workers it forks import what the trainer imports (worker_environ)
    with socket.socket(fileno=args.fd) as sock:  # closed on the way out: no ResourceWarning
        serve(sock, args.owner_pid)


if __name__ == "__main__":
    main()
