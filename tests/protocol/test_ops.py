"""The request builders against the service that serves them: every op a client builds is
one the server knows, with the fields it reads."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_gym.envs.echo.env import EchoEnv
from openenv_gym.protocol import ops
from openenv_gym.server.service import EnvService


@pytest.fixture
def service():
    service = EnvService(lambda: EchoEnv(max_steps=5), env_name="echo")
    yield service
    service.shutdown()


def _ok(reply: dict) -> dict:
    assert reply["ok"], reply.get("error")
    return reply


def test_every_session_op_is_served_with_the_fields_it_sends(service: EnvService) -> None:
    assert _ok(service.handle(ops.spec()))["spec"]["env"] == "echo"
    first = _ok(service.handle(ops.reset(seed=3)))
    sid = first["sid"]
    # The same session again: no new session is made.
    assert _ok(service.handle(ops.reset(sid, seed=3)))["sid"] == sid
    assert len(service.sessions) == 1
    step = _ok(service.handle(ops.step(sid, {"message": "hey"})))
    assert step["obs"] == {"echo": "hey", "length": 3}
    assert _ok(service.handle(ops.state(sid)))["state"]["step_count"] == 1
    assert _ok(service.handle(ops.get_attr(sid, "max_steps")))["value"] == 5
    _ok(service.handle(ops.set_attr(sid, "max_steps", 9)))
    assert _ok(service.handle(ops.call(sid, "max_steps")))["value"] == 9
    draw = _ok(service.handle(ops.call(sid, "np_random_call", ["integers", 0, 100], {"size": 2})))["value"]
    assert np.asarray(draw).shape == (2,)
    assert "frame" in _ok(service.handle(ops.render(sid)))
    assert "sessions" in _ok(service.handle(ops.web()))["web"]
    _ok(service.handle(ops.close(sid)))
    assert len(service.sessions) == 0
