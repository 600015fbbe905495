"""Socket helpers shared by the binary server and client: addresses and frames.

Addresses are strings: ``unix:///path/to.sock`` or ``tcp://127.0.0.1:PORT``.
:class:`FrameReader` reads frames with as few system calls as the data allows (a small
frame costs one ``recv``, or a ``poll`` and a ``recv`` under a deadline) instead of Python's
per-call socket timeouts, each of which adds a ``poll`` before every send and receive. On a
2-core machine the syscalls per message are much of a remote step's overhead.

Example:
    >>> parse_address("tcp://127.0.0.1:9000")
    ('tcp', ('127.0.0.1', 9000))
"""

from __future__ import annotations

import array
import os
import select
import socket
import time
from typing import Any

from openenv_gym.errors import ProtocolError, WorkerConnectionError
from openenv_gym.protocol.bell import Bell, BellListener
from openenv_gym.protocol.wire import HEADER, MAX_FRAME, decode, encode, frame_length

__all__ = ["parse_address", "connect", "FrameReader", "send_frame", "read_message", "write_message",
           "available_cores", "poll_ms", "SPIN_SECONDS"]

#: Most file descriptors accepted with one frame.
MAX_FDS = 4
_FDS_SPACE = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
#: The longest wait ``poll`` takes, in milliseconds (a C int): about 24.8 days.
_MAX_POLL_MS = 2**31 - 1


def poll_ms(remaining: float) -> float:
    """``poll``'s timeout for a wait of ``remaining`` seconds: rounded up by a millisecond (so
    the deadline has passed when it returns empty), 0 once it has passed, and capped at what
    ``poll`` takes (a call timeout may be up to a year): a capped wait just polls again.

    Example:
        >>> poll_ms(-1.0), poll_ms(0.5), poll_ms(365 * 24 * 3600.0) == 2**31 - 1
        (0, 501.0, True)
    """
    return min(remaining * 1000.0 + 1, _MAX_POLL_MS) if remaining > 0 else 0


def parse_address(address: str) -> tuple[str, Any]:
    """Split an address string into a socket family name and a socket address.

    Args:
        address: ``unix:///path`` or ``tcp://host:port``.

    Returns:
        ``("unix", path)`` or ``("tcp", (host, port))``.

    Raises:
        ValueError: For any other form.
    """
    if address.startswith("unix://"):
        return "unix", address[len("unix://") :]
    if address.startswith("tcp://"):
        host, _, port = address[len("tcp://") :].rpartition(":")
        return "tcp", (host.strip("[]"), int(port))
    raise ValueError(f"address {address!r} must look like unix:///path or tcp://127.0.0.1:PORT")


def connect(address: str, timeout: float) -> socket.socket:
    """Open a connected, low-latency socket to a worker.

    Args:
        address: The worker's binary address.
        timeout: Connect timeout in seconds.

    Returns:
        The socket, with ``timeout`` set.

    Raises:
        WorkerConnectionError: Nothing accepts connections there.
    """
    kind, addr = parse_address(address)
    family = socket.AF_UNIX if kind == "unix" else socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(addr)
    except OSError as exc:
        sock.close()
        raise WorkerConnectionError(f"cannot connect to worker at {address}: {exc}") from None
    if kind == "tcp":
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


_CHUNK = 1 << 16  # one recv takes a whole small frame (and never more than this)


_DEFAULT_SPIN_US = 300.0


def _spin_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("OPENENV_GYM_SPIN_US", _DEFAULT_SPIN_US))) / 1e6
    except ValueError:
        return _DEFAULT_SPIN_US / 1e6


#: How long a reader polls (yielding the CPU) before it sleeps in the kernel. Waking a
#: sleeping process costs ~17 µs per side here (an idle vCPU must be woken), most of a
#: small round trip; a reply or the next request often arrives within this window.
#: Workers always spin; a client spins only when it has a core to itself (see
#: :class:`FrameReader`). ``OPENENV_GYM_SPIN_US=0`` turns it off.
SPIN_SECONDS = _spin_seconds()


def available_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class FrameReader:
    """Reads length-prefixed frames from one stream socket.

    Args:
        sock: A connected socket (blocking mode; deadlines are handled here).
        max_frame: Largest accepted payload.
        accept_fds: Collect file descriptors sent along with frames (Unix sockets).
        spin: Poll for up to :data:`SPIN_SECONDS` before sleeping. Worth it only when this
            process does not compete for a core with the peers it waits for: measured here,
            a trainer spinning while 2 workers compute on 2 cores loses 15%; with 1 worker
            it gains 60%. A spin that times out stops the next ones until a wait is short
            again (:attr:`spinning`): a worker whose trainer runs a policy between steps
            then leaves the trainer its core (Pong n=2 with a CNN policy: +17%).

    Example:
        >>> a, b = socket.socketpair()
        >>> write_message(a, {"op": "health"})
        >>> FrameReader(b).read_message()
        {'op': 'health'}
    """

    def __init__(self, sock: socket.socket, max_frame: int = MAX_FRAME, accept_fds: bool = False,
                 spin: bool = True) -> None:
        self.sock = sock
        self.spin = SPIN_SECONDS if spin else 0.0
        self._spin_pays = True  # the last wait was short enough for a spin to catch it
        self.max_frame = max_frame
        self.accept_fds = accept_fds and sock.family == socket.AF_UNIX
        self._rest = b""
        self._poller: select.poll | None = None
        #: Descriptors that came with the last frame read (the caller owns them).
        self.fds: list[int] = []
        #: Whether the last :meth:`read` had to wait for its frame: none of it had come yet.
        self.waited = False
        self._bell: BellListener | None = None

    def listen(self, bell_fd: int) -> bool:
        """Sleep on a pool's bell (:mod:`~openenv_gym.protocol.bell`, whose descriptor this
        reader now owns) instead of the socket while waiting for a frame to start. Its sender
        rings after each send: a worker's reader, given the bell with ``slice_open``.

        Returns:
            Whether the reader listens: False when ``bell_fd`` is no eventfd (it is closed, and
            the reader waits on its socket as before).
        """
        self.stop_listening()
        try:
            self._bell = BellListener(bell_fd, self.sock)
        except (ValueError, OSError):
            return False
        return True

    def stop_listening(self) -> None:
        """Wait on the socket again, closing the bell's descriptor (safe to call twice)."""
        bell, self._bell = self._bell, None
        if bell is not None:
            bell.close()

    @property
    def spinning(self) -> bool:
        """Whether the next wait starts with a spin: this reader spins, and its last wait was
        shorter than :attr:`spin` seconds (a longer one is timed without spinning)."""
        return bool(self.spin) and self._spin_pays

    @property
    def unread(self) -> bytes:
        """What came on the connection that no read returned yet: past the last frame, or
        the start of a frame whose read a deadline cut short."""
        return self._rest

    def read(self, deadline: float | None = None, drain_oversized: bool = False) -> memoryview:
        """Read one frame's payload.

        Args:
            deadline: ``time.monotonic()`` value to give up at (None: wait forever).
            drain_oversized: Read and drop an oversized payload (a server keeps the stream
                framed and answers with an error); otherwise the connection is left as is.

        Returns:
            The payload (its arrays decode as views of it).

        Raises:
            ProtocolError: The frame is larger than ``max_frame``.
            ConnectionResetError: The peer closed the connection.
            socket.timeout: The deadline passed.
        """
        self.fds = []
        self.waited = False
        data = self._rest
        while len(data) < HEADER.size:
            data += self._recv(_CHUNK, deadline)
            self._rest = data  # a deadline passing mid-frame keeps what arrived
        try:
            length = frame_length(data[: HEADER.size], self.max_frame)
        except ProtocolError:
            self._rest = b""
            if drain_oversized:
                (announced,) = HEADER.unpack_from(data)
                self._drain(HEADER.size + announced - len(data))
            self.close_fds()
            raise
        end = HEADER.size + length
        if len(data) < end:
            buf = bytearray(end)
            buf[: len(data)] = data
            view = memoryview(buf)
            got = len(data)
            try:
                while got < end:
                    got += self._recv_into(view[got:], deadline)
            except socket.timeout:
                self._rest = bytes(view[:got])
                raise
            data = buf
        self._rest = bytes(data[end:]) if len(data) > end else b""
        return memoryview(data)[HEADER.size : end]

    def read_message(self, deadline: float | None = None) -> Any:
        """Read and decode one frame (see :meth:`read`)."""
        return decode(self.read(deadline))

    def take_if(self, expected: bytes, deadline: float | None = None) -> bool:
        """Take the next frame if it is exactly ``expected`` (header and payload) and nothing
        came after it, waiting for it as :meth:`read` does; otherwise leave what came for
        :meth:`read`. A reply known in advance (the usual vector step's) is then compared,
        not parsed and decoded.

        Returns:
            Whether the frame was ``expected`` and is taken (always False for a reader that
            accepts descriptors: those come back with :meth:`read`'s frame).

        Raises:
            ConnectionResetError: The peer closed the connection.
            socket.timeout: The deadline passed.
        """
        if self.accept_fds:
            return False
        self.fds = []
        self.waited = False
        data = self._rest or self._recv(_CHUNK, deadline)
        if data == expected:
            self._rest = b""
            return True
        self._rest = data
        return False

    def _recv(self, n: int, deadline: float | None) -> bytes:
        try:
            data = self._recv_once(n, socket.MSG_DONTWAIT)  # what came already
        except BlockingIOError:
            self.waited = True
            data = self._wait(n, deadline)
        else:
            self._spin_pays = True  # no wait is a short one
        if not data:
            raise ConnectionResetError("connection closed by peer")
        return data

    def _wait(self, n: int, deadline: float | None) -> bytes:
        """``recv(n)`` once something comes (nothing had): after a spin, or sleeping (on the
        bell, for a reader that :meth:`listen` s to one)."""
        started = 0.0
        if self.spin:
            # Spin only while waits are short: a peer that computes between messages (a
            # policy's forward pass between steps) would find a core taken by a spin that
            # cannot succeed. A spin that fails stops the next; a short wait starts them again.
            if self._spin_pays:
                data = self._spin(n)
                self._spin_pays = data is not None
                if data is not None:
                    return data
            else:
                started = time.perf_counter()
        if deadline is not None:
            data = self._bounded(n, deadline)
        elif self._bell is not None:
            data = self._rung(n)
        else:
            data = self._recv_once(n)
        if started:
            self._spin_pays = time.perf_counter() - started < self.spin
        return data

    def _rung(self, n: int) -> bytes:
        """``recv(n)`` once something comes, sleeping on the bell between looks."""
        bell = self._bell
        while True:
            try:
                return self._recv_once(n, socket.MSG_DONTWAIT)
            except BlockingIOError:
                bell.wait()  # type: ignore[union-attr]

    def _spin(self, n: int) -> bytes | None:
        """Poll without sleeping for up to :data:`SPIN_SECONDS` (nothing had come when
        :meth:`_recv` looked); None when nothing came."""
        end = time.perf_counter() + self.spin
        while True:
            os.sched_yield()
            try:
                return self._recv_once(n, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if time.perf_counter() > end:
                    return None

    def _recv_into(self, view: memoryview, deadline: float | None) -> int:
        if deadline is None:
            k = self.sock.recv_into(view, len(view))
        else:
            k = self._bounded(view, deadline)
        if k == 0:
            raise ConnectionResetError("connection closed by peer")
        return k

    def _bounded(self, target: int | memoryview, deadline: float) -> Any:
        """``recv(target)`` (a size) or ``recv_into(target)`` (a buffer), waiting no longer
        than ``deadline``.

        The wait is a ``poll`` for input, not a blocking receive: a task asleep in ``recv``
        on a Unix socket is also woken each time the peer reads what it sent (the socket has
        room to write again), which costs two context switches per message. Data that
        arrived before the deadline is taken even after it.

        Raises:
            socket.timeout: Nothing came before the deadline.
        """
        poller = self._poller
        if poller is None:
            poller = self._poller = select.poll()
            poller.register(self.sock, select.POLLIN)
        remaining = deadline - time.monotonic()
        while not poller.poll(poll_ms(remaining)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("timed out")
        if isinstance(target, int):
            return self._recv_once(target, socket.MSG_DONTWAIT)
        return self.sock.recv_into(target, 0, socket.MSG_DONTWAIT)

    def _recv_once(self, n: int, flags: int = 0) -> bytes:
        """One ``recv`` of up to ``n`` bytes, taking descriptors that came along if accepted."""
        if self.accept_fds:
            data, ancdata, _, _ = self.sock.recvmsg(n, _FDS_SPACE, flags)
            self._take_fds(ancdata)
            return data
        return self.sock.recv(n, flags)

    def _drain(self, n: int) -> None:
        chunk = bytearray(min(n, 1 << 20))
        view = memoryview(chunk)
        while n > 0:
            n -= self._recv_into(view[: min(n, len(chunk))], None)

    def _take_fds(self, ancdata: list[tuple[int, int, bytes]]) -> None:
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                self.fds.extend(array.array("i", data[: len(data) - len(data) % 4]))

    def close_fds(self) -> None:
        """Close the descriptors of the last frame (when nobody takes them)."""
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def send_frame(sock: socket.socket, frame: bytes, fds: list[int] | tuple[int, ...] = (),
               deadline: float | None = None, bell: Bell | None = None) -> None:
    """Send a whole frame; ``fds`` (Unix sockets) travel with its first byte.

    Args:
        sock: A connected socket in blocking mode.
        frame: The frame.
        fds: File descriptors to pass along.
        deadline: ``time.monotonic()`` value to give up at (None: block as long as it takes).
        bell: The peer's bell (:mod:`~openenv_gym.protocol.bell`), rung before waiting for
            room when the frame does not fit in the socket's buffer: a peer asleep on it
            would otherwise never read, and the send never end. (Ringing once it is sent is
            the caller's: a trainer rings once for all its workers.)

    Raises:
        socket.timeout: The peer did not take the frame before the deadline.
    """
    flags = 0 if deadline is None and bell is None else socket.MSG_DONTWAIT
    if fds:
        sent = sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))], flags)
    else:
        try:
            sent = sock.send(frame, flags)
        except BlockingIOError:
            sent = 0
    if sent == len(frame):
        return  # the usual case: the whole frame fit in the socket buffer at once
    if bell is not None:
        bell.ring()
        if deadline is None:  # the peer reads now: the rest may block as it takes
            sock.sendall(memoryview(frame)[sent:])
            return
    view = memoryview(frame)
    poller = None
    while sent < len(view):
        try:
            sent += sock.send(view[sent:], flags)
        except BlockingIOError:
            if poller is None:
                poller = select.poll()
                poller.register(sock, select.POLLOUT)
            remaining = deadline - time.monotonic()  # type: ignore[operator]
            if remaining <= 0 or not poller.poll(poll_ms(remaining)):
                raise socket.timeout("timed out") from None


def read_message(sock: socket.socket, max_frame: int = MAX_FRAME) -> Any:
    """Read and decode one frame from a blocking socket (a one-off: no read-ahead is kept).

    Raises:
        ProtocolError: Oversized or undecodable frame (the oversized payload is not read).
        ConnectionResetError: The peer closed the connection.
    """
    length = frame_length(bytes(_recv_exact(sock, HEADER.size)), max_frame)
    return decode(_recv_exact(sock, length))


def write_message(sock: socket.socket, message: Any) -> None:
    """Encode and send one frame."""
    sock.sendall(encode(message))


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionResetError("connection closed by peer")
        got += k
    return buf
