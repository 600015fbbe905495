"""Frame reading: several frames in one recv, deadlines without socket timeouts, descriptors
(``pair``: tests/protocol/conftest.py)."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from openenv_gym.protocol.sockets import FrameReader, send_frame
from openenv_gym.protocol.wire import decode, encode



def test_frame_reader_splits_frames_that_arrive_together(pair) -> None:
    a, b = pair
    a.sendall(encode({"n": 1}) + encode({"n": 2, "blob": b"x" * 200_000}) + encode({"n": 3}))
    reader = FrameReader(b)
    assert [decode(reader.read())["n"] for _ in range(3)] == [1, 2, 3]


@pytest.mark.parametrize("spin", [True, False])
def test_a_deadline_ends_the_wait_and_a_late_frame_is_still_read(pair, spin: bool) -> None:
    a, b = pair
    reader = FrameReader(b, spin=spin)
    with pytest.raises(socket.timeout):
        reader.read(deadline=time.monotonic() + 0.05)
    frame = encode({"late": True, "blob": b"x" * 100})
    for part in (frame[:3], frame[3:50]):  # part of the header, then part of the payload
        a.sendall(part)
        with pytest.raises(socket.timeout):
            reader.read(deadline=time.monotonic() + 0.05)  # keeps what it has read
    a.sendall(frame[50:])
    assert decode(reader.read(deadline=time.monotonic() + 5))["blob"] == b"x" * 100


def test_a_frame_that_came_before_the_deadline_is_read_after_it(pair) -> None:
    # A vector env reads its workers one after another: after waiting out a hung worker,
    # the others' replies, already there, must not be counted as late.
    a, b = pair
    reader = FrameReader(b, spin=False)
    a.sendall(encode({"n": 1}))
    time.sleep(0.01)
    assert decode(reader.read(deadline=time.monotonic() - 1.0)) == {"n": 1}
    with pytest.raises(socket.timeout):
        reader.read(deadline=time.monotonic() - 1.0)  # nothing there: no wait at all


def test_a_short_deadline_after_a_long_one_is_kept(pair) -> None:
    # A 60 s call's wait must not outlive it: a later call with 0.2 s left times out
    # instead of waiting a minute.
    a, b = pair
    reader = FrameReader(b, spin=False)
    a.sendall(encode({"n": 1}))
    assert decode(reader.read(deadline=time.monotonic() + 60)) == {"n": 1}
    start = time.monotonic()
    with pytest.raises(socket.timeout):
        reader.read(deadline=start + 0.2)
    assert time.monotonic() - start < 30  # a bound behaviour, not a speed: 60 s if broken


def test_descriptors_sent_with_a_frame_reach_the_reader(pair) -> None:
    a, b = pair
    r, w = os.pipe()
    try:
        send_frame(a, encode({"op": "x"}), [r])
        reader = FrameReader(b, accept_fds=True)
        assert decode(reader.read()) == {"op": "x"}
        [fd] = reader.fds
        os.write(w, b"ok")
        assert os.read(fd, 2) == b"ok"  # the same pipe, through the passed descriptor
        os.close(fd)
    finally:
        for f in (r, w):
            os.close(f)


def test_a_spin_that_times_out_stops_the_next_and_a_short_wait_starts_them_again(pair) -> None:
    # A worker whose trainer computes between steps (a policy's forward pass) must not keep
    # a core busy with spins that cannot succeed; a trainer that steps in a tight loop again
    # gets them back at its next short wait.
    a, b = pair
    reader = FrameReader(b, spin=True)
    reader.spin = 0.002  # a 2 ms window, whatever OPENENV_GYM_SPIN_US says
    assert reader.spinning

    def late(n: int) -> dict[str, int]:
        timer = threading.Timer(0.05, a.sendall, [encode({"n": n})])
        timer.start()
        try:
            return decode(reader.read(deadline=time.monotonic() + 5))
        finally:
            timer.join()

    assert late(1) == {"n": 1}
    assert not reader.spinning  # the spin timed out: the next wait sleeps at once
    assert late(2) == {"n": 2}
    assert not reader.spinning  # a long wait, timed without spinning, keeps it off
    a.sendall(encode({"n": 3}))
    assert decode(reader.read()) == {"n": 3}
    assert reader.spinning  # a short wait: spins again
    assert not FrameReader(b, spin=False).spinning


@pytest.mark.parametrize("spin", [True, False])
def test_a_read_tells_whether_it_waited_for_its_frame(pair, spin: bool) -> None:
    # A vector env reads first the worker whose reply had not come: this is how it knows.
    a, b = pair
    reader = FrameReader(b, spin=spin)
    a.sendall(encode({"n": 1}))
    assert decode(reader.read(deadline=time.monotonic() + 5)) == {"n": 1}
    assert not reader.waited
    timer = threading.Timer(0.05, a.sendall, [encode({"n": 2}) + encode({"n": 3})])
    timer.start()
    try:
        assert decode(reader.read(deadline=time.monotonic() + 5)) == {"n": 2}
    finally:
        timer.join()
    assert reader.waited
    assert decode(reader.read()) == {"n": 3}  # it came with the last one: no wait
    assert not reader.waited


def test_take_if_takes_only_the_expected_frame_and_leaves_any_other_for_read(pair) -> None:
    # The usual vector step's reply is compared, not decoded: one that says more (an info
    # inline, an error), arrives split, or has another frame behind it must reach read() whole.
    a, b = pair
    plain = encode({"ok": True})
    reader = FrameReader(b, spin=False)
    a.sendall(plain)
    assert reader.take_if(plain, deadline=time.monotonic() + 5)
    assert reader.unread == b""
    other = encode({"ok": True, "infos": {0: {"lives": 3}}})
    a.sendall(other)
    assert not reader.take_if(plain, deadline=time.monotonic() + 5)
    assert decode(reader.read(deadline=time.monotonic() + 5)) == {"ok": True, "infos": {0: {"lives": 3}}}
    a.sendall(plain[:3])  # half a header: waits for the rest in read()
    assert not reader.take_if(plain, deadline=time.monotonic() + 5)
    a.sendall(plain[3:] + encode({"n": 2}))  # the plain frame with the next one behind it
    assert decode(reader.read(deadline=time.monotonic() + 5)) == {"ok": True}
    assert decode(reader.read(deadline=time.monotonic() + 5)) == {"n": 2}


def test_take_if_waits_until_the_deadline_and_tells_a_closed_peer(pair) -> None:
    a, b = pair
    plain = encode({"ok": True})
    reader = FrameReader(b, spin=False)
    with pytest.raises(socket.timeout):
        reader.take_if(plain, deadline=time.monotonic() + 0.05)
    threading.Timer(0.05, a.sendall, (plain,)).start()
    assert reader.take_if(plain, deadline=time.monotonic() + 5)
    assert reader.waited
    a.close()
    with pytest.raises(ConnectionResetError):
        reader.take_if(plain, deadline=time.monotonic() + 5)


def test_take_if_leaves_a_frame_with_descriptors_to_read(pair) -> None:
    # A reader that accepts descriptors hands them out with read()'s frame: take_if must not
    # take the frame (and lose them).
    a, b = pair
    plain = encode({"ok": True})
    r, w = os.pipe()
    try:
        send_frame(a, plain, fds=[r])
        reader = FrameReader(b, accept_fds=True)
        assert not reader.take_if(plain, deadline=time.monotonic() + 5)
        assert decode(reader.read(deadline=time.monotonic() + 5)) == {"ok": True}
        assert len(reader.fds) == 1
        reader.close_fds()
    finally:
        os.close(r)
        os.close(w)
