"""The trainer side of a slice refuses replies that do not fit (a broken or hostile worker)."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest
from gymnasium import spaces

from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.sockets import FrameReader, send_frame
from openenv_gym.protocol.slices import SliceLayout
from openenv_gym.protocol.wire import decode, encode
from openenv_gym.vector.slices import RemoteSlice

OBS, ACT = spaces.Box(-1, 1, (3,)), spaces.Discrete(2)
BAD_REPLIES = [
    {"infos": {7: {"x": 1}}},                  # an env the slice does not have
    {"errors": "everything"},                   # not a map
    {"finals": {0: 5}},                         # not an (obs, info) pair
    {"infos": {"0": {}}},                       # keys must be env indices
    {"infos": {True: {}}},                      # ... not bools, which hash like 1
    {"infos": {0: 5}},                          # an info must be a map
]


class _FakeWorker:
    """Answers slice_open like a worker, then every slice_step with ``reply``."""

    def __init__(self, path: str, reply: dict[str, Any], shared: bool) -> None:
        self.reply = reply
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.size = SliceLayout(OBS, ACT, 2).size
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        reader = FrameReader(conn, accept_fds=True)
        try:
            while True:
                request = decode(reader.read())
                reader.close_fds()
                if request["op"] == "slice_open":
                    send_frame(conn, encode({"ok": True, "slice": "s", "sids": ["a", "b"], "size": self.size}))
                else:
                    send_frame(conn, encode({"ok": True, **self.reply}))
        except (ConnectionError, OSError):
            conn.close()


CASES = [(reply, shared) for reply in BAD_REPLIES for shared in (True, False)]
CASES.append(({"columns": {"reward": [1.0, 2.0, 3.0]}}, False))  # 3 rewards for 2 envs


@pytest.mark.parametrize("reply, shared", CASES)
def test_malformed_slice_replies_are_protocol_errors(tmp_path, reply: dict[str, Any], shared: bool) -> None:
    path = str(tmp_path / "w.sock")
    worker = _FakeWorker(path, reply, shared)
    client = BinaryClient(f"unix://{path}", timeout=5)
    piece = RemoteSlice(client, OBS, ACT, 2, shared=shared)
    try:
        piece.columns["cmd"][:] = 0
        piece.send()
        with pytest.raises(ProtocolError, match="malformed slice reply"):
            piece.receive()
    finally:
        piece.release()
        client.drop()
        worker.listener.close()
