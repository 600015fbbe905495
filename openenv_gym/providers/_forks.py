"""Starting process workers by fork from a pre-imported server (the owner's side).

:func:`spawn` asks this process's fork server (:mod:`openenv_gym.server.forkserver`, started
on first use, one per worker environment) for a new worker and returns a
:class:`ForkedProcess`, which the process provider uses as it would a ``subprocess.Popen``:
``pid``, ``poll()``, ``wait()``, ``terminate()``, ``kill()``. It waits on and signals the
worker through a pidfd, so a recycled pid is never hit; the exit status comes from the fork
server, which is the worker's parent.

Where this cannot work (no pidfd: not Linux, or a kernel before 5.3; a request too large for
one message; a fork server that failed to start) :func:`spawn` returns None and the provider
spawns the worker as before. Measured on 2 cores (``benchmarks/bench_start.py``): a worker
serves in tens of milliseconds instead of ~0.3 s, and costs half the memory or less.

Example:
    >>> import os
    >>> proc = spawn(["echo", "--unix", "/tmp/example.sock", "--owner-pid", str(os.getpid())],
    ...              "/tmp/example.log", dict(os.environ))
    >>> proc is None or proc.poll() is None
    True
    >>> if proc is not None:
    ...     proc.terminate(); _ = proc.wait(5)
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import select
import signal
import socket
import subprocess
import threading
from typing import Any, Callable

from openenv_gym.providers._runtime import python_command
from openenv_gym.server.forkserver import MAX_MESSAGE

__all__ = ["ForkedProcess", "available", "spawn", "shutdown"]

#: Seconds a fork server may take to import the worker code.
START_TIMEOUT = 60.0
#: Seconds a fork server interrupted while it starts may take to finish its imports and
#: read the goodbye, before it is killed.
GOODBYE_TIMEOUT = 5.0
#: Bytes the server's command line reserves for each worker's (see ``--room``).
COMMAND_LINE_ROOM = 4096
#: ``returncode`` of a worker whose exit status was lost with its fork server.
STATUS_LOST = 255


class ForkServer:
    """This process's connection to one fork server.

    Args:
        environ: The environment the server (and so every worker it forks) runs with.
    """

    def __init__(self, environ: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._lock = threading.Lock()
        #: The thread whose call holds ``_lock`` (None: none).
        self._caller: int | None = None
        try:
            self.proc = subprocess.Popen(
                [*python_command(), "-m", "openenv_gym.server.forkserver", "--fd", str(theirs.fileno()),
                 "--owner-pid", str(os.getpid()), "--room", " " * COMMAND_LINE_ROOM],
                # stdout to /dev/null: a caller reading the trainer's output until EOF must
                # not wait on the server; stderr stays, for what would stop it starting.
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                env=environ, start_new_session=True)
        finally:
            theirs.close()
        self._sock = ours
        ours.settimeout(START_TIMEOUT)
        try:
            hello = ours.recv(MAX_MESSAGE)
        except OSError:
            hello = b""
        except BaseException:
            # Interrupted (Ctrl-C) while it starts: it has forked nothing, so it ends now. The
            # socket alone would not end it: the traceback holds it open, and a notebook keeps
            # the last traceback (and so this server) until the next error.
            self._end_unserved()
            raise
        if not hello:
            self.close()
            raise OSError("the fork server did not start (its error is on stderr)")
        ours.settimeout(None)

    def fork(self, argv: list[str], log: str, hold: bool = False, untrusted: bool = False) -> ForkedProcess:
        """A new worker running ``python -m openenv_gym.server *argv``, output appended to ``log``.

        With ``hold`` it runs no worker code until a ``release`` request (see :func:`spawn`).
        With ``untrusted`` the server first loads what the worker of an env that runs child
        processes needs for them (see :mod:`openenv_gym.server.forkserver`).

        Raises:
            OSError: The server is gone or refused (the caller spawns instead).
            ValueError: The request does not fit in one message (huge env kwargs).
        """
        reply, fds = self._call({"op": "fork", "argv": argv, "log": log, "cwd": os.getcwd(),
                                 "hold": hold, "untrusted": untrusted})
        if "error" in reply or not fds:
            for fd in fds:
                os.close(fd)
            raise OSError(reply.get("error", "the fork server sent no pidfd"))
        return ForkedProcess(self, int(reply["pid"]), fds[0], argv)

    def status(self, pid: int) -> int | None:
        """The wait status of an exited child, None while it runs.

        Raises:
            OSError: The server is gone (the status with it).
        """
        reply, _ = self._call({"op": "status", "pid": pid})
        return reply.get("status")

    def _call(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        data = json.dumps(request).encode()
        if len(data) > MAX_MESSAGE:
            raise ValueError(f"a {len(data)}-byte request exceeds the fork server's {MAX_MESSAGE}")
        if self._caller == threading.get_ident():
            # The garbage collector ran a dropped env's finalizer inside this thread's own
            # call, and stopping its workers asks for their exit status: the lock would wait
            # for this thread forever (and the reply due is the outer call's).
            raise OSError("the fork server is busy with this thread's own call")
        with self._lock:
            self._caller = threading.get_ident()
            try:
                self._sock.send(data)
                data, fds, _, _ = socket.recv_fds(self._sock, MAX_MESSAGE, 1)
            except BaseException:
                # Cut short (Ctrl-C): the reply due would answer the next request. The
                # server exits on the closed socket; the next start begins a new one.
                self._sock.close()
                raise
            finally:
                self._caller = None
        if not data:
            raise OSError("the fork server is gone")
        return json.loads(data), fds

    def alive(self) -> bool:
        """Whether the server still runs."""
        return self.proc.poll() is None

    def _end_unserved(self) -> None:
        """End a server that never served (it has forked nothing).

        Told goodbye, it tells its sentinel there is nothing to do: killed, it would leave the
        sentinel waiting for this process to exit (one more process per interrupted start in
        a notebook). It reads the goodbye once its imports are done: a thread waits for that,
        so the interrupt goes on at once (another Ctrl-C cannot cut the goodbye short), and
        kills it if it takes longer than :data:`GOODBYE_TIMEOUT`.
        """
        try:
            with contextlib.suppress(OSError):
                self._sock.send(b'{"op": "bye"}')
            threading.Thread(target=self._reap_after_goodbye, name="openenv-gym-fork-server-goodbye",
                             daemon=True).start()
        except BaseException:  # no thread (interpreter exit), or interrupted again: kill it
            self._sock.close()
            self.proc.kill()
            self.proc.wait()
            raise

    def _reap_after_goodbye(self) -> None:
        try:
            self.proc.wait(GOODBYE_TIMEOUT)  # the socket stays open meanwhile: its hello must not fail
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            self._sock.close()

    def close(self) -> None:
        """Stop the server: it exits on seeing its socket closed. Workers it forked run on."""
        with contextlib.suppress(OSError):
            # Told, it exits at once; a socket closed without it means its owner died.
            self._sock.send(b'{"op": "bye"}')
        self._sock.close()
        try:
            self.proc.wait(5.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ForkedProcess:
    """A worker forked by a :class:`ForkServer`, with the part of ``subprocess.Popen`` the
    process provider uses.

    Args:
        server: The fork server (the worker's parent).
        pid: The worker's pid.
        pidfd: A pidfd of the worker (owned by this object from now on).
        args: The worker's arguments (as ``Popen.args``).
    """

    def __init__(self, server: ForkServer, pid: int, pidfd: int, args: list[str]) -> None:
        self.pid = pid
        self.args = args
        #: As ``Popen.returncode``: None while it runs, ``-signal`` if a signal ended it.
        self.returncode: int | None = None
        #: Whether the exit status was lost with the fork server (``returncode`` is then
        #: :data:`STATUS_LOST`).
        self.status_lost = False
        self._server = server
        self._pidfd: int | None = pidfd
        self._lock = threading.Lock()

    def _release(self) -> None:
        # Let a worker forked held run (see spawn's before_run).
        try:
            self._server._call({"op": "release", "pid": self.pid})
        except OSError:
            pass  # the server is gone: the held worker sees its gate close and exits unrun

    def poll(self) -> int | None:
        """The exit code once the worker exited, else None."""
        if self.returncode is None and self._exited(0.0):
            self._collect()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the worker to exit; returns its exit code.

        Raises:
            subprocess.TimeoutExpired: It still runs after ``timeout`` seconds.
        """
        if self.returncode is None:
            if not self._exited(timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            self._collect()
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the worker, if it still runs."""
        with self._lock:
            if self._pidfd is None or self.returncode is not None:
                return  # it ended and was collected: nothing to signal
            try:
                signal.pidfd_send_signal(self._pidfd, sig)
            except ProcessLookupError:
                pass  # exited, not yet collected

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)

    def _exited(self, timeout: float | None) -> bool:
        pidfd = self._pidfd
        if pidfd is None or self.returncode is not None:
            return True
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)  # readable once the process has exited
        return bool(poller.poll(None if timeout is None else timeout * 1000))

    def _collect(self) -> None:
        with self._lock:
            if self.returncode is not None:
                return
            try:
                status = self._server.status(self.pid)
            except OSError:
                status = None
            if status is None:
                # The server is gone, and the status with it: the worker did exit (its pidfd says so).
                self.status_lost, self.returncode = True, STATUS_LOST
            else:
                self.returncode = os.waitstatus_to_exitcode(status)
            # The pidfd stays open until this object goes: closing it here could let another
            # thread, polling it right now, poll whatever file reuses the number.

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        # os.close bound at definition: at interpreter exit the module's globals may already
        # be gone (a forked child ending with sys.exit printed "Exception ignored" per worker).
        if getattr(self, "_pidfd", None) is not None:
            _close(self._pidfd)  # type: ignore[arg-type]
            self._pidfd = None


#: This process's fork servers by environment, least recently used first.
_servers: dict[tuple[tuple[str, str], ...], ForkServer] = {}
_lock = threading.Lock()
#: Most fork servers kept at once: a trainer whose environment keeps changing (libraries that
#: set variables as they load) would otherwise gather one per change.
MAX_SERVERS = 4


@functools.cache
def available() -> bool:
    """Whether workers can be forked here: pidfds (Linux 5.3+) and fd passing."""
    if not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return True


def spawn(argv: list[str], log: str, environ: dict[str, str],
          before_run: Callable[[ForkedProcess], None] | None = None,
          untrusted: bool = False) -> ForkedProcess | None:
    """Fork a worker ``python -m openenv_gym.server *argv`` from the fork server for ``environ``.

    Args:
        argv: The worker's arguments.
        log: The file its output is appended to.
        environ: Its environment: workers with different environments come from different
            fork servers, since what a server imported was set up by its environment.
        before_run: Called with the worker while it is held, before it runs any worker code
            (the process provider puts it in its cgroup here); if this raises, the worker is
            killed unrun.
        untrusted: The worker serves an env that runs child processes (the catalog's
            ``untrusted``): the fork server loads their helpers for it and later workers.

    Returns:
        The worker, or None where forking is not available (spawn it instead).
    """
    proc = _fork(argv, log, environ, hold=before_run is not None, untrusted=untrusted)
    if proc is None or before_run is None:
        return proc
    try:
        before_run(proc)
    except BaseException:
        proc.kill()
        raise
    proc._release()
    return proc


def _fork(argv: list[str], log: str, environ: dict[str, str], hold: bool,
          untrusted: bool) -> ForkedProcess | None:
    if not available():
        return None
    key = tuple(sorted(environ.items()))
    for _ in range(2):  # a server found dead on the way is replaced once
        with _lock:
            server = _servers.pop(key, None)
            if server is not None and not server.alive():
                server.close()
                server = None
            if server is None:
                while len(_servers) >= MAX_SERVERS:
                    # Its workers run on; only their exit statuses go with it.
                    _servers.pop(next(iter(_servers))).close()
                try:
                    server = ForkServer(environ)
                except OSError:
                    return None
            _servers[key] = server  # now the most recently used
        try:
            return server.fork(argv, log, hold, untrusted)
        except ValueError:
            return None  # too large to ask for; the server is fine
        except OSError:
            with _lock:
                if _servers.get(key) is server:
                    _servers.pop(key).close()
    return None


def shutdown() -> None:
    """Stop this process's fork servers (the workers they forked are left running)."""
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()


_inherited: list[ForkServer] = []


def _forget_after_fork() -> None:
    # A fork of the owner must not talk over the owner's sockets: it starts its own servers.
    # Closing its copies lets a server see its owner go; the objects are kept, unused, since
    # their Popen is the owner's child, not this process's.
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    for server in _servers.values():
        server._sock.close()
        _inherited.append(server)
    _servers.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(shutdown)
