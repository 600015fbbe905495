"""Shared fixtures: real workers on every provider, and the Docker gate.

Docker tests run against a real engine. Without one they skip with a reason, unless
``OPENENV_GYM_REQUIRE_DOCKER=1`` (set by ``.ci/run``), where they fail instead.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable

import pytest

REQUIRE_DOCKER = os.environ.get("OPENENV_GYM_REQUIRE_DOCKER") == "1"


def pytest_configure(config: pytest.Config) -> None:
    """Let the Ctrl-C tests' SIGINT raise KeyboardInterrupt even in a suite started with
    SIGINT ignored (bash ignores it for a ``cmd &`` run without job control, and Python then
    installs no handler): they stand for a user at an interactive Python, which always has
    one. Children started with ``exec`` get back the default disposition too."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: The finished session, whose exit status the run ends with (see :func:`pytest_unconfigure`).
_finished: list[pytest.Session] = []


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Keep the session for :func:`pytest_unconfigure` (its final exit status)."""
    _finished[:] = [session]


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End a run that loaded Ray without the interpreter's teardown, once every report is out
    and the exit handlers (Ray's shutdown, the providers' last sweep) have run, with pytest's
    own exit status. gRPC's threads, left by Ray's driver, can crash that teardown after
    every test passed: a CI run on 2026-12-04 ended "2144 passed" and then "Segmentation
    fault" (the kernel log put the faulting address in gRPC's channel-argument names; gRPC
    objects freed at interpreter exit, grpc/grpc#11804), which made the run fail. The
    product's own exits are tested in subprocesses, which this does not touch."""
    import atexit
    import sys

    if "ray" not in sys.modules or not _finished:
        return
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(_finished[0].exitstatus))


#: Child-side Python that sends SIGKILL (``tgkill``, x86-64) to every thread of process ``$W``
#: (else its parent) it can reach and prints ``reached=N``. One line of statements without
#: double quotes, so that it also goes into a shell's ``python3 -c "..."``.
SIGNAL_EVERY_THREAD = (
    "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long; "
    "w = int(os.environ.get('W') or os.getppid()); "
    "reached = [t for t in range(w, w + 20000) if libc.syscall(234, w, t, 0) == 0]; "
    "[libc.syscall(234, w, t, 9) for t in reached]; print('reached=%d' % len(reached))")

#: Child-side Python for probes run in a sandbox: ``attempt(key, action)`` prints
#: ``key=ok``, or ``key=`` and the name of the OSError the action raised.
ATTEMPT = """
def attempt(key, action):
    try:
        action()
        print(key + "=ok")
    except OSError as exc:
        print(key + "=" + type(exc).__name__)
"""


def docker_unavailable_reason() -> str | None:
    """Why Docker tests cannot run here, or None when an engine is reachable."""
    try:
        from openenv_gym.providers import provider_class

        ok, reason = provider_class("docker").available()
    except Exception as exc:  # the docker extra may be missing entirely
        return f"docker provider unavailable: {exc}"
    return None if ok else reason


def require_docker() -> None:
    """Skip (or fail under OPENENV_GYM_REQUIRE_DOCKER=1) when no Docker engine is reachable."""
    reason = docker_unavailable_reason()
    if reason is None:
        return
    message = (f"no Docker engine: {reason}. Start one (`dockerd &`) to run Docker tests; "
               "CI sets OPENENV_GYM_REQUIRE_DOCKER=1 to make this a failure.")
    if REQUIRE_DOCKER:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def provider(request: pytest.FixtureRequest) -> str:
    """Each provider name in turn; the docker one only where an engine is reachable."""
    if request.param == "docker":
        require_docker()
    return request.param


class ServedEnv:
    """An env server started with ``python -m openenv_gym.server`` for a test, on loopback."""

    def __init__(self, env: str, *args: str) -> None:
        import re
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openenv_gym.server", env, "--http-port", "0", "--tcp-port", "0",
             *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        line = ""
        for line in self.proc.stdout:  # type: ignore[union-attr]
            if "worker ready" in line:
                break
        match = re.search(r"binary=(\S+) http=(\S+)", line)
        if not match:
            self.stop()
            raise RuntimeError(f"server did not start: {line!r}")
        self.binary, self.http = match.group(1), match.group(2)

    def stop(self) -> None:
        import subprocess

        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def served_echo():
    """A running Echo server with HTTP and binary fronts (max 4 sessions). Its sessions do not
    expire within a test: a loaded machine may stall a test for seconds between two requests."""
    server = ServedEnv("echo", "--max-sessions", "4")
    yield server
    server.stop()


def in_forked_child(work: "Callable[[], None]") -> int:
    """Run ``work`` in a forked child that ends with ``os._exit`` (no close, no atexit), as a
    multiprocessing child does; returns its exit code (0: ``work`` ran without error)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            work()
            code = 0
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def worker_sessions(address: str) -> int:
    """How many sessions the worker serving at ``address`` holds (its ``health``)."""
    from openenv_gym.client.transport import BinaryClient

    client = BinaryClient(address, timeout=30)
    try:
        return int(client.request({"op": "health"})["sessions"])
    finally:
        client.drop()


def stop_process(pid: int, timeout: float = 30.0) -> None:
    """SIGSTOP ``pid`` and wait until every one of its threads has stopped.

    A group stop lands thread by thread: a worker thread woken by a request can still answer
    it right after ``kill`` returns, which made "hung worker" tests flaky under load.
    """
    import signal
    import time

    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                    states.append(f.read().rsplit(b")", 1)[1].split()[0])
            except OSError:
                continue  # the thread exited meanwhile
        if states and all(state in (b"T", b"t") for state in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop within {timeout} s of SIGSTOP")


def _queued(client: Any, request: int) -> int:
    """Bytes queued on ``client``'s connection, as the ``ioctl`` ``request`` counts them
    (0 without a connection, yet or any more)."""
    import array
    import fcntl

    queued = array.array("i", [0])
    try:
        fcntl.ioctl(client.connection.fileno(), request, queued)
    except (AttributeError, OSError):
        return 0
    return queued[0]


def request_unread(client: Any) -> bool:
    """Whether a request sits on ``client``'s connection unread by its (stopped) worker. A test
    interrupting a call to a stopped worker waits for this too: on a loaded machine the main
    thread may not have sent the request yet, and then there is no call in flight to cut short."""
    import termios

    return _queued(client, termios.TIOCOUTQ) > 0  # bytes the peer has not read


def replied(client: Any) -> bool:
    """Whether the reply to ``client``'s last request was read, or has come and waits unread
    on its connection (a vector step reading another worker first)."""
    import termios

    return not client.owed or _queued(client, termios.FIONREAD) > 0


@contextlib.contextmanager
def ctrl_c_after(seconds: float, when: "Callable[[], bool] | None" = None):
    """Deliver SIGINT to this process's main thread after ``seconds`` (and once ``when()`` is
    true, polled), as Ctrl-C (or Jupyter's interrupt) would; the block expects the
    KeyboardInterrupt and must last until then."""
    import signal
    import threading

    main = threading.main_thread().ident
    done = threading.Event()

    def fire() -> None:
        if done.wait(seconds):
            return
        while when is not None and not when():
            if done.wait(0.01):
                return
        signal.pthread_kill(main, signal.SIGINT)

    thread = threading.Thread(target=fire, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
