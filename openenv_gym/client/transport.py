"""The client side of the binary path: one connection to one worker, every call bounded in time.

:meth:`BinaryClient.request` sends a request and waits for its reply; :meth:`send` and
:meth:`receive` split it so a vector env can send to every worker before gathering.
Failures become typed errors; after any failure mid-call, an interrupt (Ctrl-C) included,
the connection is dropped (it may be out of frame) and the next call reconnects. A call cut
short with its request on the way (Ctrl-C) is let finish first: the next call waits until
the worker is done with it, so that the worker never runs the two out of order (a step
interrupted while the worker was busy would otherwise run after the next one).

Example:
    >>> client = BinaryClient("unix:///nonexistent.sock", timeout=0.1)
    >>> try:
    ...     client.request({"op": "health"})
    ... except WorkerConnectionError as exc:
    ...     print(type(exc).__name__)
    WorkerConnectionError
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
import weakref
from typing import Any

from openenv_gym.errors import (
    InvalidRequestError,
    ProtocolError,
    SessionLimitError,
    WorkerConnectionError,
    WorkerCrashedError,
    WorkerError,
    WorkerTimeoutError,
    error_from_wire,
)
from openenv_gym.protocol.bell import Bell
from openenv_gym.protocol.sockets import FrameReader, available_cores, connect, poll_ms, send_frame
from openenv_gym.protocol.wire import HEADER, MAX_FRAME, decode, encode, frame_length, oversized

__all__ = ["BinaryClient", "settle_together"]


class BinaryClient:
    """A connection to a worker's binary address.

    Args:
        address: ``unix:///path`` or ``tcp://host:port``.
        timeout: Default seconds a call may take before :class:`WorkerTimeoutError`.
        max_frame: Largest reply accepted, and largest request sent (the worker's limit, the
            wire's MAX_FRAME unless it was started with another).
        spin: Poll briefly for replies before sleeping (see
            :class:`~openenv_gym.protocol.sockets.FrameReader`); None: when this machine has
            more than one core. Set it off when this process waits on as many busy workers
            as there are cores.
        timeout_name: The caller's own name of ``timeout``, which a timeout's message tells to
            raise (``step_timeout`` for a vector env).
    """

    def __init__(self, address: str, timeout: float = 60.0, max_frame: int = MAX_FRAME,
                 spin: bool | None = None, timeout_name: str = "timeout") -> None:
        self.address = address
        self.timeout_name = timeout_name
        self.spin = available_cores() > 1 if spin is None else spin
        self.timeout = timeout
        self.max_frame = max_frame
        self._sock: socket.socket | None = None
        self._reader: FrameReader | None = None
        self._deadline = 0.0
        #: Whether a request went out on ``_sock`` whose reply is not read yet.
        self._owed = False
        #: A connection let go of with a request still due (see :meth:`drop`), half-closed:
        #: the worker closes it once done with that request, and the next call waits for that.
        self._settling: socket.socket | None = None
        #: The settling connection :meth:`interrupt` cut: the wait for it fails, not succeeds.
        self._cut: socket.socket | None = None
        #: What came on the settling connection (the late reply; None: none to be had), for
        #: :meth:`settle`, until the next call connects.
        self._late: bytearray | None = None
        #: Held by :meth:`request` from send to reply: calls from several threads take turns
        #: instead of reading each other's replies.
        self.lock = threading.RLock()
        #: The worker's bell (:mod:`~openenv_gym.protocol.bell`), once a pool offered it one
        #: with ``slice_open``: rung after every send, since the worker may sleep on it.
        self.bell: Bell | None = None
        _clients.add(self)

    @property
    def owed(self) -> bool:
        """Whether a reply is still due on the open connection (a request sent, its reply not
        read): a connection without one is in frame, and need not be dropped."""
        return self._owed and self._sock is not None

    @property
    def waited(self) -> bool:
        """Whether the last :meth:`receive` had to wait: its reply had not come when asked for."""
        return self._reader is not None and self._reader.waited

    @property
    def connection(self) -> socket.socket | None:
        """The open connection (None between a :meth:`drop` and the next request); each
        reconnect makes a new one, so a holder can tell that what the worker bound to an
        earlier one (a forked child's sessions) has ended with it."""
        return self._sock

    def _connected(self, timeout: float, ordered: bool = True) -> socket.socket:
        if self._sock is None:
            if ordered:
                self._settle()
                self._late = None  # a caller that wants the late reply asked settle() first
            sock = connect(self.address, timeout)
            # Blocking mode: send_frame and FrameReader keep the deadlines themselves (a
            # Python socket timeout would add a poll to every send, which here needs none).
            sock.settimeout(None)
            self._sock, self._reader = sock, FrameReader(sock, self.max_frame, spin=self.spin)
        return self._sock

    def send(self, message: Any, timeout: float | None = None, fds: tuple[int, ...] = (),
             ordered: bool = True) -> None:
        """Send a request without waiting; pair with :meth:`receive`.

        Args:
            message: The request.
            timeout: Seconds the call may take (default: the client's).
            fds: File descriptors to pass along (Unix sockets only; the caller keeps its copies).
            ordered: Wait first for a call cut short earlier (see :meth:`send_frame`); False
                for a request that only closes sessions.

        Raises:
            WorkerConnectionError: The worker cannot be reached.
            InvalidRequestError: The message is larger than the wire carries (nothing sent).
        """
        self.send_frame(encode(message), timeout, fds, ordered)

    def send_frame(self, frame: bytes, timeout: float | None = None, fds: tuple[int, ...] = (),
                   ordered: bool = True, ring: bool = True) -> None:
        """:meth:`send` for a frame encoded ahead of time (a request sent every step).

        ``ordered=False``: the request may run before a call cut short earlier (see
        :meth:`drop`) instead of waiting for it, as a session's close may: that call then
        finds its session gone. ``ring=False``: leave ringing :attr:`bell` to the caller, who
        rings it once after sending to each of its workers."""
        if (why := oversized(frame, self.max_frame)) is not None:
            # The worker would drain it all, then refuse it: refused here, nothing is sent and
            # the connection stays in frame (both sides take MAX_FRAME unless told otherwise).
            raise InvalidRequestError(f"the request is {why}; nothing was sent")
        timeout = self.timeout if timeout is None else timeout
        self._deadline = time.monotonic() + timeout
        sock = self._connected(timeout, ordered)
        bell = self.bell
        try:
            self._owed = True  # before the send: an interrupt may land once the frame is out
            send_frame(sock, frame, fds, self._deadline, bell)
            if ring and bell is not None:
                bell.ring()
        except OSError as exc:
            self.close()
            raise WorkerConnectionError(f"worker at {self.address} dropped the connection: {exc}") from None
        except BaseException:
            self.drop()  # interrupted (Ctrl-C) part way through the frame, or after it: out of frame
            raise

    def receive(self) -> dict[str, Any]:
        """Wait for the reply to the last :meth:`send`, until that call's deadline.

        Returns:
            The reply's fields (without ``ok``).

        Raises:
            OpenEnvError: The typed error the server answered with.
            WorkerTimeoutError: No reply before the deadline.
            WorkerCrashedError: The connection closed mid-call (the worker died).
        """
        reader = self._in_flight()
        try:
            reply = decode(reader.read(self._deadline))
        except BaseException as exc:
            if (error := self._read_failed(exc)) is None:
                raise
            raise error from None
        self._owed = False
        if not isinstance(reply, dict) or "ok" not in reply:
            self.drop()
            raise ProtocolError(f"malformed reply from {self.address}")
        if not reply.pop("ok"):
            error = error_from_wire(reply.get("error"))
            if isinstance(error, SessionLimitError):
                # A worker out of room for a connection's thread says so, then closes it: the
                # next call connects anew instead of finding it closed (a "crashed worker").
                self.close()
            raise error
        return reply

    def receive_if(self, expected: bytes) -> bool:
        """Take the reply to the last :meth:`send` if it is exactly the frame ``expected``
        (a successful reply known in advance: the usual vector step's); any other is left for
        :meth:`receive`. Waits and fails as :meth:`receive` does.

        Returns:
            Whether the reply was ``expected`` (and is taken).
        """
        reader = self._in_flight()
        try:
            taken = reader.take_if(expected, self._deadline)
        except BaseException as exc:
            if (error := self._read_failed(exc)) is None:
                raise
            raise error from None
        if taken:
            self._owed = False
        return taken

    def _in_flight(self) -> FrameReader:
        """The reader of the connection a reply is awaited on."""
        if self._sock is None or self._reader is None:
            raise WorkerConnectionError(f"no request in flight to {self.address}")
        return self._reader

    def _read_failed(self, exc: BaseException) -> WorkerError | None:
        """The typed error a reply's read that raised ``exc`` raises instead, once the
        connection is dealt with: closed (a timeout, a crash), or dropped (anything else, which
        is raised as it is: None)."""
        if isinstance(exc, socket.timeout):
            self.close()  # hung: waiting on its late reply would only time out again
            return WorkerTimeoutError(
                f"worker at {self.address} did not answer within its timeout; it may be stuck "
                f"or overloaded (raise {self.timeout_name}=... if the env is slow)")
        if isinstance(exc, (ConnectionError, OSError)):
            self.close()
            return WorkerCrashedError(f"worker at {self.address} closed the connection mid-call "
                                      f"(it died or was killed): {exc}")
        # A protocol error, or an interrupt (Ctrl-C) while the reply is on its way: that
        # reply would otherwise be read as the answer to the next request.
        self.drop()
        return None

    def request(self, message: Any, timeout: float | None = None, fds: tuple[int, ...] = (),
                ordered: bool = True) -> dict[str, Any]:
        """Send a request and wait for its reply (see :meth:`send` and :meth:`receive`). Safe
        to call from several threads: one call at a time goes over the connection."""
        with self.lock:
            self.send(message, timeout, fds, ordered)
            return self.receive()

    def request_frame(self, frame: bytes, timeout: float | None = None) -> dict[str, Any]:
        """:meth:`request` for a frame encoded ahead of time (see :meth:`send_frame`)."""
        with self.lock:
            self.send_frame(frame, timeout)
            return self.receive()

    def discard_arrived_reply(self) -> bool:
        """Read and drop the reply to the last request if all of it has come, without waiting
        for more: the connection is then in frame again, and kept (a vector step cut short
        while it waited on another worker, read before this one).

        Returns:
            Whether no reply is due any more on the open connection.
        """
        reader = self._reader
        if not self._owed or reader is None:
            return not self._owed
        try:
            reader.read(deadline=time.monotonic())  # what came; a wait ends at once
        except (socket.timeout, OSError, ProtocolError):
            return False  # not all of it yet (the reader keeps what came), or broken: drop()
        reader.close_fds()
        self._owed = False
        return True

    def interrupt(self) -> None:
        """Make a call in flight on another thread fail now, as if the worker had closed the
        connection, without closing the descriptor under it (that thread drops it). A call
        still waiting for one cut short earlier (see :meth:`_settle`) fails too, with
        :class:`WorkerConnectionError`, instead of waiting on for a worker that is not ours
        to stop (an attached server)."""
        settling = self._settling
        self._cut = settling  # before the shutdown, which wakes the waiting thread
        for sock in (self._sock, settling):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def drop(self) -> None:
        """Close the connection; the next call reconnects. A request still due on it (a call
        cut short by Ctrl-C) is let finish: the next call first waits until the worker is
        done with it (see :meth:`_settle`), within that call's timeout. :meth:`close` lets
        go of that too (a worker replaced or stopped)."""
        sock, owed, reader = self._sock, self._owed, self._reader
        if sock is None:
            # Let go of already (the call cut short dropped it, and its caller drops again,
            # as a vector env drops every worker it did not hear from): what is due stays due.
            return
        if not owed:
            self.close()
            return
        self._sock = self._reader = None
        self._owed = False
        try:
            # Half-close: the worker reads the request, runs it, then sees the end and
            # closes the connection, which tells the next call it is done.
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()  # already broken: nothing of it runs on
            return
        # An older one left (a session's close does not wait for it) is let go of: only the
        # latest call cut short is waited for.
        self._close_settling()
        self._settling = sock
        # The reply's start, if the interrupted read had taken some of it (the reader keeps
        # what it took before the payload; past that the reply is lost, which settle() tells).
        self._late = bytearray(reader.unread if reader is not None else b"")
        _settling_clients.add(self)

    def close(self) -> None:
        """Close the connection and any still settling, at once (a worker replaced or
        stopped, a timeout, a crash: nothing of an interrupted call is waited for)."""
        sock = self._sock
        self._sock = self._reader = None
        self._owed = False
        self._late = None
        try:
            if sock is not None:
                sock.close()
        finally:
            self._close_settling()

    def __del__(self) -> None:
        # A client let go of unclosed (an env dropped or left at exit without close(), whose
        # worker its own finalizer stops) closes its connections: each left to the socket's
        # finalizer would warn "unclosed socket", an error where warnings are (-W error).
        # Module globals may be gone at interpreter exit: only the sockets' own close is used.
        for sock in (getattr(self, "_sock", None), getattr(self, "_settling", None)):
            if sock is not None:
                sock.close()

    def _close_settling(self) -> None:
        sock, self._settling, self._cut = self._settling, None, None
        _settling_clients.discard(self)
        if sock is not None:
            sock.close()

    def settle(self, timeout: float) -> dict[str, Any] | None:
        """Wait, as the next call would (see :meth:`drop`), up to ``timeout`` seconds, for the
        worker to finish the call cut short last, and return that call's reply: what a caller
        needs of an interrupted call (the id of a session it created).

        Returns:
            The late reply's fields (an error reply's too), or None: no call was cut short,
            or its reply cannot be had (read in part before the cut, or none came).

        Raises:
            WorkerTimeoutError: The worker is still busy with it after ``timeout``.
            WorkerConnectionError: :meth:`interrupt` ended the wait.
        """
        with self.lock:
            if self._settling is None and self._late is None:
                return None
            self._deadline = time.monotonic() + timeout
            self._settle()
            late, self._late = self._late, None
            return _late_reply(late, self.max_frame)

    def _settle(self) -> None:
        """Wait, until this call's deadline, for the worker to close the connection :meth:`drop`
        let go of with a request due: then it is done with that request, and the next one
        cannot run before it (a worker serves each connection on a thread of its own).

        Raises:
            WorkerTimeoutError: The worker is still busy with it at the deadline (hung).
            WorkerConnectionError: :meth:`interrupt` ended the wait (a close on another thread).
        """
        if self._settling is not None and (failed := _settle_all([self], [self._deadline])):
            raise failed[self]

    def _unsettled_error(self) -> WorkerTimeoutError:
        return WorkerTimeoutError(
            f"worker at {self.address} is still busy with a call cut short earlier (Ctrl-C) "
            f"and did not finish it within the timeout; it may be stuck (raise "
            f"{self.timeout_name}=... if the env is slow)")

    def _cut_error(self) -> WorkerConnectionError:
        return WorkerConnectionError(
            f"the call to worker at {self.address} was cut short (closed on another thread) "
            f"while it waited for the worker to finish a call interrupted earlier")


def settle_together(clients: list[BinaryClient], which: list[int],
                    timeout: float | None = None) -> dict[int, WorkerError]:
    """What each client's next call waits for first (see :meth:`BinaryClient.drop`), for
    several clients at once: their workers finish their interrupted calls side by side, so
    waiting for each in turn, a timeout each, would add the timeouts of hung ones up.

    Args:
        clients: A vector env's clients, one per worker.
        which: The indices of those about to send.
        timeout: Seconds each may wait (default: each client's own).

    Returns:
        Index -> the error of each whose worker had not finished by then
        (:class:`WorkerTimeoutError`), or whose wait :meth:`BinaryClient.interrupt` ended
        (:class:`WorkerConnectionError`); their interrupted calls are let go of, so their
        next call does not wait for them again.
    """
    if not _settling_clients:
        return {}  # every step of a vector env: nothing interrupted, nothing to wait for
    waiting = {i: clients[i] for i in which if clients[i]._settling is not None}
    now = time.monotonic()
    failed = _settle_all(list(waiting.values()),
                         [now + (c.timeout if timeout is None else timeout) for c in waiting.values()])
    return {i: failed[c] for i, c in waiting.items() if c in failed}


def _settle_all(clients: list[BinaryClient], deadlines: list[float]) -> dict[BinaryClient, WorkerError]:
    """Wait for the worker of each client's settling connection to close it, each until its
    deadline, then let go of it. Returns the error of each client whose deadline passed
    first, or whose wait :meth:`BinaryClient.interrupt` cut."""
    poller = select.poll()
    pending: dict[int, tuple[BinaryClient, float]] = {}
    for client, deadline in zip(clients, deadlines):
        sock = client._settling
        if sock is not None:
            poller.register(sock, select.POLLIN)
            pending[sock.fileno()] = (client, deadline)
    failed: dict[BinaryClient, WorkerError] = {}

    def let_go(fd: int) -> BinaryClient:
        client = pending.pop(fd)[0]
        poller.unregister(fd)
        if client._cut is client._settling:  # interrupted, not finished by its worker
            failed[client] = client._cut_error()
        client._close_settling()
        return client

    while pending:
        soonest = min(deadline for _, deadline in pending.values())
        for fd, _ in poller.poll(poll_ms(soonest - time.monotonic())):
            if _peer_closed(pending[fd][0]):
                let_go(fd)
        now = time.monotonic()
        for fd, (client, deadline) in list(pending.items()):
            if deadline <= now:
                let_go(fd)
                failed.setdefault(client, client._unsettled_error())
    return failed


def _peer_closed(client: BinaryClient) -> bool:
    """Take what came on ``client``'s readable settling connection (its late reply); whether
    the peer has closed it (or reset it)."""
    try:
        data = client._settling.recv(1 << 16, socket.MSG_DONTWAIT)  # type: ignore[union-attr]
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        client._late = None
        return True  # reset: the worker is gone, so nothing of it runs on
    late = client._late
    if late is not None:
        late += data
        if len(late) > HEADER.size + client.max_frame:
            client._late = None  # more than a reply: nothing to be had of it
    return not data


def _late_reply(data: bytearray | None, max_frame: int) -> dict[str, Any] | None:
    """The reply in ``data``, all that came on a settling connection; None unless that is
    exactly one whole frame of a reply (not one read in part before the cut)."""
    if data is None or len(data) < HEADER.size:
        return None
    try:
        length = frame_length(bytes(data[:HEADER.size]), max_frame)
        reply = decode(memoryview(data)[HEADER.size:]) if len(data) == HEADER.size + length else None
    except (ProtocolError, ValueError, TypeError):
        return None
    return reply if isinstance(reply, dict) else None


#: The clients with a connection :meth:`BinaryClient.drop` let go of with a request due: none,
#: but after a Ctrl-C, so a vector env's step need not look at each of its clients.
_settling_clients: "weakref.WeakSet[BinaryClient]" = weakref.WeakSet()

#: Every client of this process, so that a fork can let go of their connections.
_clients: "weakref.WeakSet[BinaryClient]" = weakref.WeakSet()


def _forget_connections_after_fork() -> None:
    # A fork must not talk over its parent's connections: a request of each on one stream
    # would take the other's reply. Closing the child's copies leaves the parent's open; the
    # child's next call connects anew.
    for client in list(_clients):
        client.lock = threading.RLock()  # another thread may have held it at the fork
        client.close()  # at once: a half-close would end the parent's connection too


os.register_at_fork(after_in_child=_forget_connections_after_fork)
