"""``BinaryClient.receive_if``: the usual vector step's read of a reply known in advance.

Every usual step of a vector env reads its replies through it, so its failures must map as
``receive()``'s do: a hung worker is a typed timeout and a closed connection (the worker is
replaced), a dead one a typed crash and a closed connection, and Ctrl-C drops the connection
with the request still due, so the next call waits for the worker to finish it. The peer here
is a bare Unix socket that answers as told, so each case is exact.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import WorkerCrashedError, WorkerTimeoutError
from openenv_gym.protocol.slices import PLAIN_REPLY
from openenv_gym.protocol.sockets import read_message
from openenv_gym.protocol.wire import encode


class Peer:
    """A one-connection server on a Unix socket that does what each test tells it to."""

    def __init__(self, path: str) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.address = f"unix://{path}"
        self.conn: socket.socket | None = None

    def accept(self) -> dict[str, Any]:
        """Accept the client's connection and return its first request."""
        self.conn, _ = self.listener.accept()
        return read_message(self.conn)

    def close(self) -> None:
        for sock in (self.conn, self.listener):
            if sock is not None:
                sock.close()


@pytest.fixture
def peer(tmp_path: Any) -> Iterator[Peer]:
    server = Peer(os.path.join(tmp_path, "w.sock"))
    yield server
    server.close()


def sent(client: BinaryClient, peer: Peer, timeout: float = 5.0) -> dict[str, Any]:
    """Send one request from ``client`` and return it as the peer read it."""
    got: dict[str, Any] = {}
    reader = threading.Thread(target=lambda: got.update(peer.accept()))
    reader.start()
    client.send({"op": "slice_step", "slice": "s"}, timeout=timeout)
    reader.join(5.0)
    assert got == {"op": "slice_step", "slice": "s"}
    return got


def test_the_expected_frame_is_taken_and_the_call_is_done(peer: Peer) -> None:
    client = BinaryClient(peer.address, spin=False)
    sent(client, peer)
    peer.conn.sendall(PLAIN_REPLY)  # type: ignore[union-attr]
    assert client.receive_if(PLAIN_REPLY) is True
    assert not client.owed
    client.close()


def test_another_reply_is_left_whole_for_receive(peer: Peer) -> None:
    client = BinaryClient(peer.address, spin=False)
    sent(client, peer)
    peer.conn.sendall(encode({"ok": True, "infos": {0: {"x": 1}}}))  # type: ignore[union-attr]
    assert client.receive_if(PLAIN_REPLY) is False
    assert client.owed
    assert client.receive() == {"infos": {0: {"x": 1}}}
    assert not client.owed
    client.close()


def test_a_hung_worker_is_a_typed_timeout_and_its_connection_closed(peer: Peer) -> None:
    client = BinaryClient(peer.address, spin=False, timeout_name="step_timeout")
    sent(client, peer, timeout=0.3)  # the peer never answers
    with pytest.raises(WorkerTimeoutError, match="step_timeout"):
        client.receive_if(PLAIN_REPLY)
    assert client.connection is None and not client.owed
    # Closed, not left to settle: the worker that hung is replaced, not waited for.
    assert client._settling is None


def test_a_dead_worker_is_a_typed_crash_and_its_connection_closed(peer: Peer) -> None:
    client = BinaryClient(peer.address, spin=False)
    sent(client, peer)
    peer.conn.close()  # type: ignore[union-attr]
    with pytest.raises(WorkerCrashedError, match="closed the connection"):
        client.receive_if(PLAIN_REPLY)
    assert client.connection is None and client._settling is None


def test_a_crash_after_part_of_the_reply_is_a_typed_crash(peer: Peer) -> None:
    client = BinaryClient(peer.address, spin=False)
    sent(client, peer)
    peer.conn.sendall(PLAIN_REPLY[:3])  # type: ignore[union-attr]
    peer.conn.close()  # type: ignore[union-attr]
    # The three bytes are not the plain reply: left for receive(), whose read then fails.
    assert client.receive_if(PLAIN_REPLY) is False
    with pytest.raises(WorkerCrashedError):
        client.receive()
    assert client.connection is None


def test_ctrl_c_while_waiting_drops_the_connection_with_the_request_still_due(peer: Peer) -> None:
    client = BinaryClient(peer.address, spin=False)
    sent(client, peer)

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            client.receive_if(PLAIN_REPLY)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # Dropped, not closed: the worker may still be running the step, and the next call
    # waits for it to finish (the half-closed connection) instead of running beside it.
    assert client.connection is None and not client.owed
    assert client._settling is not None
    # The worker sees the half-close once it reads on: the request it has is the last.
    peer.conn.settimeout(5.0)  # type: ignore[union-attr]
    assert peer.conn.recv(16) == b""  # type: ignore[union-attr]
    client.close()
    assert client._settling is None
