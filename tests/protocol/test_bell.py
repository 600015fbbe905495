"""The pool's bell (protocol/bell.py): a worker's reader sleeps on it instead of its socket,
and every way a request reaches it wakes it. The backstop is raised to an hour here, so a
wake-up that went missing hangs the reading thread instead of costing a second."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any, Iterator

import pytest

from openenv_gym.protocol import bell as bell_module
from openenv_gym.protocol.bell import Bell, BellListener
from openenv_gym.protocol.sockets import FrameReader, send_frame
from openenv_gym.protocol.wire import decode, encode


@pytest.fixture(autouse=True)
def no_backstop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bell_module, "BACKSTOP_SECONDS", 3600.0)


@pytest.fixture
def bell() -> Iterator[Bell]:
    ringer = Bell()
    yield ringer
    ringer.close()


@pytest.fixture
def door(pair, bell) -> Iterator[BellListener]:
    """A listener on the bell and the pair's reading end, as a worker holds one."""
    listener = BellListener(os.dup(bell.fileno()), pair[1])
    yield listener
    listener.close()


@pytest.fixture
def reader(pair, bell) -> Iterator[FrameReader]:
    """A reader of the pair's reading end that listens to the bell."""
    frames = FrameReader(pair[1], spin=False)
    assert frames.listen(os.dup(bell.fileno())) is True
    yield frames
    frames.stop_listening()


def _read_in_thread(reader: FrameReader) -> tuple[threading.Thread, list[Any]]:
    """Start reading one frame on a thread; it lands in the list (or the error it raised)."""
    got: list[Any] = []

    def read() -> None:
        try:
            got.append(decode(reader.read()))
        except Exception as exc:  # noqa: BLE001 (the test asserts on it)
            got.append(exc)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(0.2)  # asleep on the bell by now, most likely
    return thread, got


def _eventfds() -> int:
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            found += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:[eventfd]"
        except OSError:
            pass
    return found


def test_a_ring_wakes_a_listener_and_a_ring_nobody_waited_for_costs_one_turn(bell, door) -> None:
    assert door.wait(0) is False
    bell.ring()
    bell.ring()  # the counter is not zero now: edge-triggered, each write is an edge
    assert door.wait(0) is True
    assert door.wait(0) is False  # rings before the wait are reported once, not forever
    bell.ring()
    assert door.wait(0) is True


def test_the_peer_hanging_up_wakes_a_listener(pair, door) -> None:
    a, _ = pair
    a.send(b"data")  # data alone is not a ring: the socket is watched for hang-ups only
    assert door.wait(0) is False
    a.shutdown(socket.SHUT_WR)
    assert door.wait(0) is True


def test_a_descriptor_that_is_no_eventfd_is_refused_and_closed(pair) -> None:
    r, w = os.pipe()
    try:
        with pytest.raises(ValueError, match="not an eventfd"):
            BellListener(r, pair[1])
        with pytest.raises(OSError):
            os.fstat(r)  # closed by the refusal
    finally:
        os.close(w)
    r, w = os.pipe()
    try:
        frames = FrameReader(pair[1], spin=False)
        assert frames.listen(r) is False  # a worker's reader: it waits on its socket as before
        with pytest.raises(OSError):
            os.fstat(r)
        pair[0].sendall(encode({"op": "ping"}))
        assert decode(frames.read()) == {"op": "ping"}
    finally:
        os.close(w)


def test_a_closed_bell_rings_nothing_and_its_descriptor_is_freed() -> None:
    before = _eventfds()
    ringer = Bell()
    assert _eventfds() == before + 1
    ringer.close()
    ringer.ring()  # no error, and no write to whatever file reuses the number
    assert ringer.closed and ringer.fileno() == -1 and _eventfds() == before


def test_a_listening_reader_gets_a_frame_sent_while_it_sleeps(pair, bell, reader) -> None:
    thread, got = _read_in_thread(reader)
    send_frame(pair[0], encode({"n": 1}), deadline=None)
    bell.ring()
    thread.join(30)
    assert got == [{"n": 1}]


def test_a_listening_reader_gets_a_frame_sent_before_it_waits(pair, bell, reader) -> None:
    send_frame(pair[0], encode({"n": 2}), deadline=None)
    bell.ring()
    assert decode(reader.read()) == {"n": 2}
    # A ring that came with nothing for this reader (another worker's request): it looks at
    # its socket, sleeps again, and still wakes for its own.
    bell.ring()
    thread, got = _read_in_thread(reader)
    assert got == []
    send_frame(pair[0], encode({"n": 3}), deadline=None)
    bell.ring()
    thread.join(30)
    assert got == [{"n": 3}]


@pytest.mark.parametrize("seconds", [None, 60.0])
def test_a_frame_larger_than_the_socket_buffer_rings_before_waiting_for_room(pair, bell, reader,
                                                                             seconds) -> None:
    # The reader sleeps on the bell, so it would never read, and the send never end, if the
    # bell rang only once the whole frame was out.
    thread, got = _read_in_thread(reader)
    blob = os.urandom(8 << 20)
    send_frame(pair[0], encode({"blob": blob}), bell=bell,
               deadline=None if seconds is None else time.monotonic() + seconds)
    thread.join(30)
    assert len(got) == 1 and got[0]["blob"] == blob


def test_stop_listening_closes_the_bell_and_the_reader_waits_on_its_socket_again(pair, bell) -> None:
    before = _eventfds()
    frames = FrameReader(pair[1], spin=False)
    frames.listen(os.dup(bell.fileno()))
    assert _eventfds() == before + 1
    frames.stop_listening()
    frames.stop_listening()
    assert _eventfds() == before
    thread, got = _read_in_thread(frames)
    send_frame(pair[0], encode({"n": 4}), deadline=None)  # no ring: it sleeps on its socket
    thread.join(30)
    assert got == [{"n": 4}]
