"""What the web view shows: images from frames and image observations, text otherwise."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from openenv_gym.server.main import build_service
from openenv_gym.server.web import as_image, encode_png, pool_source, snapshot


def _decode_png(data: bytes) -> np.ndarray:
    """A small PNG reader (filter 0 rows only, as encode_png writes) to check round trips."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, _, color = struct.unpack(">IIBB", header[:10])
    channels = {0: 1, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    assert not rows[:, 0].any()
    return rows[:, 1:].reshape(height, width, channels).squeeze()


@pytest.mark.parametrize("shape", [(12, 9), (12, 9, 3), (12, 9, 4)])
def test_png_round_trip(shape: tuple[int, ...]) -> None:
    image = np.random.default_rng(0).integers(0, 256, shape, dtype=np.uint8)
    assert np.array_equal(_decode_png(encode_png(image)), image)


def test_which_arrays_are_pictures() -> None:
    assert as_image(np.zeros((210, 160, 3), np.uint8)).shape == (210, 160, 3)  # Atari RGB
    stack = np.stack([np.full((84, 84), i, np.uint8) for i in range(4)])
    assert (as_image(stack) == 3).all()  # frame stack: the newest frame
    assert as_image(np.ones((84, 84), np.float32)).max() == 255  # floats in [0, 1] scaled
    assert as_image(np.zeros(61, np.float32)) is None  # FinRL's state vector is data
    assert as_image(np.zeros((4, 4))) is None
    assert as_image("text") is None


def test_snapshot_of_text_and_image_sessions() -> None:
    service = build_service("echo")
    try:
        sid = service.reset()["sid"]
        service.step(sid, {"message": "hi"})
        [s] = snapshot(service)["sessions"]
        assert s["view"]["frame"] is None and "echo: hi" in s["view"]["text"]
        assert s["history"] == [{"step": 1, "action": "message: hi", "reward": 0.2}]
    finally:
        service.shutdown()
    service = build_service("gym", {"env_id": "CartPole-v1", "render_mode": "rgb_array"})
    try:
        sid = service.reset(seed=0)["sid"]
        service.step(sid, 0)
        view = snapshot(service)
        [s] = view["sessions"]
        import base64

        assert _decode_png(base64.b64decode(s["view"]["frame"])).shape == (400, 600, 3)
        assert snapshot(service, view["version"]) == {"version": view["version"], "unchanged": True}
        service.step(sid, 1)
        assert not snapshot(service, view["version"]).get("unchanged")
    finally:
        service.shutdown()


def test_pool_source_reports_a_dead_worker_and_keeps_the_others() -> None:
    from openenv_gym.providers import get_provider

    provider = get_provider("process")
    workers = provider.start("echo", 2)
    try:
        source = pool_source([(f"w{i}", (lambda w=w: w.address)) for i, w in enumerate(workers)],
                             timeout=5)
        assert source(None)["workers"] == ["w0", "w1"]
        workers[1].stop()
        view = source(None)
        assert "w1" in view["errors"] and "w0" not in view["errors"]
    finally:
        provider.stop_all(workers)


def test_the_page_escapes_its_title_and_refuses_to_be_framed() -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from openenv_gym.server.web import web_router

    app = FastAPI()
    app.include_router(web_router(lambda known: {"sessions": []}, title="<img src=x onerror=alert(1)>"))
    reply = TestClient(app).get("/web")
    assert reply.status_code == 200
    assert "<img src=x" not in reply.text and "&lt;img src=x onerror=alert(1)&gt;" in reply.text
    assert "frame-ancestors 'none'" in reply.headers["content-security-policy"].split("; ")
    assert reply.headers["x-frame-options"] == "DENY"


def test_a_lone_surrogate_in_an_observation_leaves_the_view_readable() -> None:
    # An env's text read with surrogateescape (a non-UTF-8 file name) has no UTF-8 form:
    # /web/state answered 500 for every session, and the binary `web` op a pool's page reads
    # could not be encoded, so the page lost the whole worker.
    from fastapi.testclient import TestClient

    from openenv_gym.envs.echo.env import EchoEnv
    from openenv_gym.protocol import wire
    from openenv_gym.server.http import create_app
    from openenv_gym.server.service import EnvService

    class Undecodable(EchoEnv):
        def observation_to_wire(self, obs):
            return {"echo": obs.echo + "\udcff", "length": obs.length}

    service = EnvService(Undecodable, env_name="undecodable")
    try:
        sid = service.reset()["sid"]
        service.step(sid, {"message": "name"})
        reply = TestClient(create_app(service), base_url="http://127.0.0.1").get("/web/state")
        assert reply.status_code == 200, reply.text
        [s] = reply.json()["sessions"]
        assert s["view"]["text"].startswith("echo: name\\udcff")
        wire.encode(service.handle({"op": "web", "known": None}))  # the pool's path
    finally:
        service.shutdown()
