"""Frame reading: several frames in one recv, deadlines without socket timeouts, descriptors."""

from __future__ import annotations

import os
import socket

import pytest

from openenv_gym.protocol.sockets import FrameReader, send_frame
from openenv_gym.protocol.wire import decode, encode


def test_frame_reader_splits_frames_that_arrive_together() -> None:
    a, b = socket.socketpair()
    try:
        a.sendall(encode({"n": 1}) + encode({"n": 2, "blob": b"x" * 200_000}) + encode({"n": 3}))
        reader = FrameReader(b)
        assert [decode(reader.read())["n"] for _ in range(3)] == [1, 2, 3]
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("spin", [True, False])
def test_a_deadline_ends_the_wait_and_a_late_frame_is_still_read(spin: bool) -> None:
    import time

    a, b = socket.socketpair()
    try:
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
    finally:
        a.close()
        b.close()


def test_descriptors_sent_with_a_frame_reach_the_reader() -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
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
        a.close()
        b.close()
