"""The in-worker git server: ``git http-backend`` behind a small stdlib HTTP server.

One server per worker process, bound to ``127.0.0.1`` on a free port (loopback exists
even in a container with ``network_mode="none"``), serving every repository under one
root folder. It runs in a daemon thread of the worker, so it can never outlive it.
Pushes are allowed (``REMOTE_USER`` is set for the backend); hooks of the served
repositories are disabled, so an agent cannot make the server run its code outside the
command limits. Each backend runs in a session of its own, whose processes are killed when
its request ends, or when the env's command that sent it ends (a request the command did not
wait for): a program the agent's repository config names cannot leave a daemon, nor run while
the env's checks do. An env's remotes are served only while one of its commands runs.

Example:
    >>> import tempfile
    >>> server = GitHttpServer(tempfile.mkdtemp())
    >>> server.url.startswith("http://127.0.0.1:")
    True
    >>> server.close()
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional
from urllib.parse import SplitResult, urlsplit

from openenv_gym.envs._exec import gate_line, held_start, reap_orphans

__all__ = ["GitHttpServer"]

#: Seconds one backend request may take.
BACKEND_TIMEOUT = 60.0
#: Largest request body accepted (a push of the tasks' small repos is far below).
MAX_BODY = 256 << 20
#: Bytes of request bodies and backend replies the server holds at once, all the worker's
#: envs together: both sit in the worker's own memory, and the OOM killer of a container
#: (1 GiB) ends the agent's processes first, then the worker with every session in it. Eight
#: pushes of MAX_BODY at once from one command did that; more now get 503. A single reply is
#: held to MAX_BODY too.
MAX_BODIES = 256 << 20
#: Connections the server handles at once, all envs together; more are closed unanswered.
#: Each takes a thread of the worker from its accept on, before a request (or its slot
#: below) is read, and threads count against the container's pids_limit (128): a command
#: holding 250 idle connections left the worker no thread and its own shell no fork until
#: the command's timeout, and logged a traceback per refused thread.
MAX_CONNECTIONS = 16
#: Backends one env's repositories may have running at once; more requests are refused
#: (503) rather than queued. Each backend and what it starts hold processes of the worker
#: (a container's 128) until its request ends, however many pushes a command fires off.
MAX_BACKENDS = 8


class GitHttpServer:
    """Serves the repositories under ``root`` over smart HTTP on loopback.

    Args:
        root: Folder whose repositories are served (``http://.../<path under root>``).

    Attributes:
        url: Base URL, e.g. ``http://127.0.0.1:40123``.
        port: Its TCP port (the one port a confined command may connect to).
    """

    def __init__(self, root: str, gate: Gate | None = None) -> None:
        self.root = os.path.realpath(root)
        handler = type("Handler", (_Handler,), {"project_root": self.root, "gate": staticmethod(gate),
                                                "slots": _Slots(MAX_BACKENDS),
                                                "bodies": _Budget(MAX_BODIES)})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="git-http",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()


#: ``gate(top_folder) -> run`` : how to run ``git http-backend`` for a request under
#: ``<root>/<top_folder>/``: ``run(start)`` calls ``start(fd)`` (which starts the backend,
#: held until a line arrives on ``fd``) and returns its result, confined as that folder's
#: commands are; None refuses the request.
Gate = Callable[[str], Optional[Callable[[Callable[[int], Any]], Any]]]


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that handles at most :data:`MAX_CONNECTIONS` at once."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type) -> None:
        super().__init__(address, handler)
        self._connections = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._connections.acquire(blocking=False):
            self.shutdown_request(request)  # no thread for it: the agent sees a closed connection
            return
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # can't start new thread: the worker's pids are used up
            self._connections.release()
            self.shutdown_request(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()


class _Slots:
    """At most ``n`` holders at once per key (a top folder: one env's repositories)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> bool:
        with self._lock:
            if self._held.get(key, 0) >= self.n:
                return False
            self._held[key] = self._held.get(key, 0) + 1
            return True

    def give_back(self, key: str) -> None:
        with self._lock:
            self._held[key] -= 1
            if not self._held[key]:
                # Every env's folder is a key of its own, and a worker outlives thousands of
                # envs (a session per rollout): a count kept at 0 was an entry per env, forever.
                del self._held[key]


class _Budget:
    """At most ``n`` units (bytes) held at once, all holders together."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.held = 0
        self._lock = threading.Lock()

    def take(self, k: int) -> bool:
        with self._lock:
            if self.held + k > self.n:
                return False
            self.held += k
            return True

    def give_back(self, k: int) -> None:
        with self._lock:
            self.held -= k


class _Refused(Exception):
    """A request body the server does not take: the HTTP status and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    project_root = ""
    gate: Gate | None = None
    slots = _Slots(MAX_BACKENDS)
    bodies = _Budget(MAX_BODIES)
    #: Bytes of :attr:`bodies` this request holds.
    _taken = 0
    protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive bookkeeping

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def log_message(self, format: str, *args: object) -> None:
        pass  # the worker's log is for the env, not for every fetch

    def handle(self) -> None:
        # The client is the agent: a malformed request (a Content-Length that is no number,
        # a chunk size that is no hex, a connection dropped mid-reply) ends its connection
        # here. Unhandled, socketserver printed a traceback per request on the worker's
        # stderr, the container's log: a hostile command wrote megabytes a second into a
        # file on the host's disk.
        try:
            super().handle()
        except Exception:  # noqa: BLE001 - what went wrong is the agent's request
            self.close_connection = True

    def _take(self, k: int, what: str = "request body") -> None:
        """Count ``k`` more bytes of this request's body (or its backend's reply, ``what``)
        against the worker's budget."""
        if self._taken + k > MAX_BODY:
            raise _Refused(413 if what == "request body" else 502, f"{what} too large")
        if not self.bodies.take(k):
            raise _Refused(503, f"the git server holds {self.bodies.n >> 20} MiB of request "
                                f"bodies and replies at most, all requests together ({what}); try again")
        self._taken += k

    def _reply(self, backend: subprocess.Popen, body: bytes | bytearray) -> bytearray:
        """Feed ``body`` to the backend and read all it writes, counted in :attr:`bodies`.

        The reply is the agent's to make large (a served repository's ``pack.compression 0``
        sends its blobs raw: 70 blobs of 15 MiB that took 5 MiB of disk): read whole, as
        ``communicate`` did, it got the worker OOM-killed.

        Raises:
            subprocess.TimeoutExpired: It ran past :data:`BACKEND_TIMEOUT`.
            _Refused: Its reply outgrew the budget.
        """
        assert backend.stdin is not None and backend.stdout is not None
        feeder = threading.Thread(target=_feed, args=(backend.stdin, body), daemon=True)
        feeder.start()
        out = bytearray()
        fd = backend.stdout.fileno()
        readable = select.poll()  # not select(): a worker's descriptors may pass 1024
        readable.register(fd, select.POLLIN)
        deadline = time.monotonic() + BACKEND_TIMEOUT
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired("git http-backend", BACKEND_TIMEOUT)
                if not readable.poll(remaining * 1000):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return out
                self._take(len(chunk), "reply")
                out += chunk
        finally:
            backend.stdout.close()

    def _body(self) -> bytes | bytearray:
        """The request's body, its bytes counted in :attr:`bodies` (given back by the caller).

        Raises:
            _Refused: It is larger than :data:`MAX_BODY`, or the budget has no room for it.
            ValueError: A chunk size or Content-Length that is no number.
        """
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()  # grown in place: parts joined at the end held it twice
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return body
                self._take(size)
                while size > 0:
                    piece = self.rfile.read(min(size, 1 << 20))
                    if not piece:
                        return body
                    body += piece
                    size -= len(piece)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        self._take(max(length, 0))
        return self.rfile.read(length) if length > 0 else b""

    def _backend(self) -> None:
        url = urlsplit(self.path)
        top = url.path.lstrip("/").split("/", 1)[0]
        run: Callable[[Callable[[int], Any]], Any] | None = held_start
        if self.gate is not None:
            run = self.gate(top)
        if run is None:
            self.send_error(404, "no such repository")
            return
        if not self.slots.take(top):
            self.send_error(503, f"more than {self.slots.n} git requests at once for one env")
            return
        try:
            self._run_backend(url, run)
        finally:
            self.slots.give_back(top)
            self.bodies.give_back(self._taken)
            self._taken = 0

    def _run_backend(self, url: SplitResult, run: Callable[[Callable[[], Any]], Any]) -> None:
        try:
            body = self._body()
        except _Refused as exc:
            self.send_error(exc.status, str(exc))
            return
        except ValueError as exc:  # a size that is no number
            self.send_error(413, str(exc))
            return
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.project_root,
            "GIT_PROJECT_ROOT": self.project_root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            # Hooks of served repos would run the agent's code outside its limits.
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "core.hooksPath",
            "GIT_CONFIG_VALUE_0": "/dev/null",
            "GIT_CONFIG_KEY_1": "safe.directory",
            "GIT_CONFIG_VALUE_1": "*",
            "REMOTE_USER": "agent",  # the backend refuses pushes from anonymous users
            "REMOTE_ADDR": self.client_address[0],
            "REQUEST_METHOD": self.command,
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
        }
        for header, var in (("Content-Encoding", "HTTP_CONTENT_ENCODING"),
                            ("Git-Protocol", "GIT_PROTOCOL")):
            if self.headers.get(header):
                env[var] = self.headers[header]
        try:
            # The served repository is the agent's: its config can name programs for git to
            # run (core.alternateRefsCommand during a push), so the backend is confined as
            # the agent's own commands are.
            # In a session of its own: what it starts (a program of the agent's config, sent
            # to the background) must neither stay in the worker's session, which the sweep
            # of a step's orphans never touches, nor outlive the request.
            # Held at a gate until the thread that started it has ended (held_start): no
            # program of the agent's runs while a thread of the worker is in its domain.
            backend = run(lambda gate: subprocess.Popen(
                ["bash", "-c", gate_line(gate) + "exec git http-backend"],
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                start_new_session=True, pass_fds=(gate,)))
        except RuntimeError as exc:  # its confinement is gone (the env is resetting or closed)
            self.send_error(503, str(exc))
            return
        try:
            out = self._reply(backend, body)
        except subprocess.TimeoutExpired:
            _end_group(backend)
            self.send_error(504, "git http-backend timed out")
            return
        except _Refused as exc:
            _end_group(backend)
            self.send_error(exc.status, str(exc))
            return
        _end_group(backend)
        # Split in place: a partition copied the payload, holding the reply twice.
        for separator in (b"\r\n\r\n", b"\n\n"):
            cut = out.find(separator)
            if cut >= 0:
                head, payload = out[:cut], memoryview(out)[cut + len(separator):]
                break
        else:
            head, payload = out, memoryview(b"")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


def _feed(stdin: Any, body: bytes | bytearray) -> None:
    """Write the request's body to the backend and close its input (it may exit first)."""
    try:
        stdin.write(body)
    except OSError:  # it exited, or was killed, before reading it all
        pass
    finally:
        try:
            stdin.close()
        except OSError:
            pass


def _end_group(backend: subprocess.Popen) -> None:
    """Kill what is left of the backend's process group, reap the backend, and sweep the
    orphans that left its group (``setsid``: re-parented to the worker, its subreaper)."""
    try:
        os.killpg(backend.pid, signal.SIGKILL)  # the group's id stays reserved while it has members
    except (ProcessLookupError, PermissionError):
        pass
    backend.wait()
    reap_orphans()
