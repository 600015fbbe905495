"""Blocking socket helpers shared by the binary server and client: addresses and frames.

Addresses are strings: ``unix:///path/to.sock`` or ``tcp://127.0.0.1:PORT``.

Example:
    >>> parse_address("tcp://127.0.0.1:9000")
    ('tcp', ('127.0.0.1', 9000))
"""

from __future__ import annotations

import socket
from typing import Any

from openenv_gym.errors import WorkerConnectionError
from openenv_gym.protocol.wire import HEADER, MAX_FRAME, decode, encode, frame_length

__all__ = ["parse_address", "connect", "recv_exact", "drain", "read_message", "write_message"]


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


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    """Read exactly ``n`` bytes.

    Raises:
        ConnectionResetError: The peer closed the connection first.
    """
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionResetError("connection closed by peer")
        got += k
    return buf


def read_message(sock: socket.socket, max_frame: int = MAX_FRAME) -> Any:
    """Read and decode one frame.

    Raises:
        ProtocolError: Oversized or undecodable frame (the oversized payload is not read).
        ConnectionResetError: The peer closed the connection.
    """
    length = frame_length(bytes(recv_exact(sock, HEADER.size)), max_frame)
    return decode(recv_exact(sock, length))


def write_message(sock: socket.socket, message: Any) -> None:
    """Encode and send one frame."""
    sock.sendall(encode(message))


def drain(sock: socket.socket, n: int) -> None:
    """Read and drop ``n`` bytes, so the stream stays framed after a refused payload."""
    chunk = bytearray(min(n, 1 << 20))
    view = memoryview(chunk)
    while n:
        k = sock.recv_into(view[: min(n, len(chunk))])
        if k == 0:
            raise ConnectionResetError("connection closed by peer")
        n -= k

