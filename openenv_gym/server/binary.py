"""The fast path: a threaded server of length-prefixed msgpack frames on a Unix or TCP socket.

One thread per connection reads a frame, lets :class:`~openenv_gym.server.service.EnvService`
answer it and writes the reply. Bad frames get error replies and the connection stays
framed: an oversized payload is read and dropped, not buffered.

Example:
    >>> from openenv_gym.envs.echo.env import EchoEnv
    >>> from openenv_gym.server.service import ConnectionScope, EnvService
    >>> server = BinaryServer(EnvService(EchoEnv), "tcp://127.0.0.1:0")
    >>> server.address.startswith("tcp://127.0.0.1:")
    True
    >>> server.close()
"""

from __future__ import annotations

import os
import socket
import socketserver
import threading
import time
from typing import Any

from openenv_gym.errors import InvalidRequestError, ProtocolError, SessionLimitError, error_to_wire
from openenv_gym.protocol.sockets import FrameReader, parse_address
from openenv_gym.protocol.wire import MAX_FRAME, decode, encode
from openenv_gym.server._pids import pids_usage
from openenv_gym.server.service import ConnectionScope, EnvService

__all__ = ["BinaryServer"]

#: Seconds the accepting thread waits for the request of a connection it must refuse.
REFUSAL_READ_SECONDS = 2.0
#: Processes and threads of a worker's ``pids_limit`` that connections leave to its env (a
#: step's helper thread, the sandboxed code's processes): at most this, at most a quarter.
PIDS_RESERVE = 16


class _Handler(socketserver.BaseRequestHandler):
    server: Any

    def handle(self) -> None:
        sock: socket.socket = self.request
        service: EnvService = self.server.service
        max_frame: int = self.server.max_frame
        if sock.family != socket.AF_UNIX:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.lock:
            self.server.connections.add(sock)
        scope = ConnectionScope()
        try:
            self._serve(sock, service, max_frame, scope)
        finally:
            with self.server.lock:
                self.server.connections.discard(sock)
            service.release(scope)  # what a forked child started, which may exit without close()

    def _serve(self, sock: socket.socket, service: EnvService, max_frame: int,
               scope: ConnectionScope) -> None:
        reader = FrameReader(sock, max_frame, accept_fds=True)
        try:
            self._serve_frames(sock, reader, service, scope)
        finally:
            reader.stop_listening()

    def _serve_frames(self, sock: socket.socket, reader: FrameReader, service: EnvService,
                      scope: ConnectionScope) -> None:
        while True:
            try:
                try:
                    request = decode(reader.read(drain_oversized=True))
                except ProtocolError as exc:  # oversized (drained) or undecodable: still in frame
                    reader.close_fds()
                    reply: Any = _error(exc)
                else:
                    if len(reader.fds) == 2 and type(request) is dict and request.get("bell") \
                            and request.get("op") == "slice_open":
                        reader.listen(reader.fds.pop())  # the pool's bell, after its buffer
                    reply = service.handle(request, reader.fds, scope)
                try:
                    frame = encode(reply)
                except (TypeError, ValueError, OverflowError) as exc:
                    # The env returned something the wire cannot carry (an object in info, text
                    # that is not UTF-8): the env's error, not a bad request of the caller's.
                    # Only a handled request's reply holds a "sid" (an error reply has none).
                    if reply.get("ok") and "sid" in reply and request.get("op") == "reset":
                        service.reset_unsent(request.get("sid"), reply["sid"])
                    if isinstance(exc, InvalidRequestError):
                        exc = ValueError(f"the env's reply cannot be sent: {exc}")
                    if reply.get("ok") and request.get("op") == "step":
                        # As check_output words it for the first step: a caller must not
                        # take the step for refused and send its action again.
                        ended = reply.get("terminated") or reply.get("truncated")
                        exc = (TypeError if isinstance(exc, TypeError) else ValueError)(
                            f"{exc}. The step itself happened"
                            + (" and ended the episode: call reset." if ended else "."))
                    frame = encode(_error(exc))
                sock.sendall(frame)
            except (ConnectionError, OSError):
                return


def _error(exc: Exception) -> dict[str, Any]:
    return {"ok": False, "error": error_to_wire(exc)}


class _RefusingThreadingMixIn(socketserver.ThreadingMixIn):
    """A thread per connection, and a typed refusal when no thread can start.

    A worker's threads count against its cgroup's or container's ``pids_limit`` (128 for
    envs that run untrusted code): each session leased over a connection of its own (an
    ``EnvPool``'s episodes) holds one. Without this, the connection past the limit was
    dropped unanswered, which its client takes for a dead worker: an ``EnvPool`` then
    restarted the worker and lost every other session on it.
    """

    daemon_threads = True
    # socketserver's default backlog is 5: a burst of clients connecting at once (a vector
    # env's or an EnvPool's sessions) overflowed it, and each TCP client past it waited a
    # SYN retransmit (1 s) before it was accepted.
    request_queue_size = 128

    def process_request(self, request: Any, client_address: Any) -> None:
        usage = pids_usage()
        reserve = min(PIDS_RESERVE, usage[1] // 4) if usage is not None else 0
        if usage is not None and usage[1] - usage[0] <= reserve:
            self._refuse(request, f"{usage[0]} of its pids_limit of {usage[1]} in use, "
                                  f"{reserve} kept for its env's steps")
            return
        try:
            super().process_request(request, client_address)
        except RuntimeError as exc:  # "can't start new thread": out of processes/threads
            self._refuse(request, str(exc))

    def _refuse(self, sock: socket.socket, why: str) -> None:
        """Answer the connection's first request with a :class:`SessionLimitError`, then close it.

        The request is read first: a TCP socket closed with unread data resets the
        connection, which could discard the answer before the client reads it.
        """
        with self.lock:  # type: ignore[attr-defined]
            open_now = len(self.connections)  # type: ignore[attr-defined]
        error = SessionLimitError(
            f"this worker cannot take another connection ({why}; {open_now} open, a thread "
            "each): its process limit (the pids_limit of its cgroup or container) is used up; "
            "close sessions you no longer use, spread them over more workers "
            "(EnvPool(num_workers=...)), or raise the limit: "
            "provider_options={'container_options': {'pids_limit': 512}}")
        reader = FrameReader(sock, self.max_frame, accept_fds=True, spin=False)  # type: ignore[attr-defined]
        try:
            reader.read(deadline=time.monotonic() + REFUSAL_READ_SECONDS, drain_oversized=True)
        except (ProtocolError, OSError):
            pass  # no (readable) request came: answer anyway, then close
        finally:
            reader.close_fds()
        try:
            sock.sendall(encode(_error(error)))
        except OSError:
            pass  # the client went away
        self.shutdown_request(sock)


class _UnixServer(_RefusingThreadingMixIn, socketserver.UnixStreamServer):
    pass


class _TCPServer(_RefusingThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True


class BinaryServer:
    """Serve an :class:`EnvService` over length-prefixed msgpack frames in a background thread.

    Args:
        service: The service to expose.
        address: ``unix:///path`` or ``tcp://127.0.0.1:PORT`` (port 0 picks a free one).
        max_frame: Largest request payload accepted.
    """

    def __init__(self, service: EnvService, address: str, max_frame: int = MAX_FRAME) -> None:
        kind, addr = parse_address(address)
        if kind == "unix":
            if os.path.exists(addr):
                os.unlink(addr)  # a stale socket from a killed predecessor in our own folder
            self._server: socketserver.BaseServer = _UnixServer(addr, _Handler, bind_and_activate=False)
        else:
            self._server = _TCPServer(addr, _Handler, bind_and_activate=False)
        try:
            self._server.server_bind()  # type: ignore[attr-defined]
        except BaseException:
            self._server.server_close()
            raise
        if kind == "unix":
            self.address = address
        else:
            host, port = self._server.server_address[:2]
            self.address = f"tcp://{host}:{port}"
        self._server.service = service  # type: ignore[attr-defined]
        self._server.max_frame = max_frame  # type: ignore[attr-defined]
        self._server.connections = set()  # type: ignore[attr-defined]
        self._server.lock = threading.Lock()  # type: ignore[attr-defined]
        self._path = addr if kind == "unix" else None
        listening = threading.Event()

        def serve() -> None:
            listening.wait()
            self._server.serve_forever(poll_interval=0.05)

        self._thread = threading.Thread(target=serve, name="binary-server", daemon=True)
        # Started before the socket listens: a worker that cannot start it (its pids_limit
        # used up) is never reached, so the provider reads its startup failure instead of
        # taking a first accepted connection for ready.
        self._thread.start()
        self._server.server_activate()  # type: ignore[attr-defined]
        listening.set()

    def close(self) -> None:
        """Stop accepting connections, end the open ones and remove the socket file.

        Open connections are shut down too: a worker that is going away must not answer a
        request it can no longer serve (its sessions and slices are closed next) with an
        error the client would take for the env's; a closed connection is a worker failure
        the client knows how to handle (restart the worker).
        """
        self._server.shutdown()
        self._server.server_close()
        with self._server.lock:  # type: ignore[attr-defined]
            open_now = list(self._server.connections)  # type: ignore[attr-defined]
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its handler
        if self._path and os.path.exists(self._path):
            try:
                os.unlink(self._path)
            except PermissionError:
                pass  # a folder closed to writes (a Docker worker's): its owner removes it
