"""What the HTTP front sends for values JSON has no type for, and its OpenAPI document.

QA (HTTP-only clients): an info holding bytes, which the binary path carries, made /reset and
/step answer 500, and each failed /reset left a session behind that its client never heard
of; /openapi.json used OpenAPI 3.2's ``itemSchema`` in a document declared as 3.1.0.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import numpy as np
import openapi_spec_validator
from fastapi.testclient import TestClient
from gymnasium import spaces

from openenv_gym.envs.base import Environment
from openenv_gym.server.http import create_app
from openenv_gym.server.service import EnvService
from tests.server.live import live_server

PACKET = b"\xff\x00\x80raw"


class BytesInfoEnv(Environment):
    """Reports a raw packet (not UTF-8) in every info."""

    def __init__(self) -> None:
        super().__init__()
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Box(0, 1, (1,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {"packet": PACKET, "packets": np.array([PACKET])}

    def step(self, action: Any):
        return np.zeros(1, np.float32), 1.0, False, False, {"packet": PACKET}


class OpaqueObservationEnv(BytesInfoEnv):
    """An unchecked observation no JSON encoder knows (a served env's own type)."""

    check_observations = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return object(), {}


def test_bytes_in_an_info_arrive_as_base64_text() -> None:
    with live_server(BytesInfoEnv) as live, httpx.Client(timeout=30) as client:
        reset = client.post(f"{live.url}/reset", json={"seed": 0})
        assert reset.status_code == 200, reset.text
        info = reset.json()["info"]
        assert base64.b64decode(info["packet"]) == PACKET
        assert [base64.b64decode(p) for p in info["packets"]] == [PACKET]
        step = client.post(f"{live.url}/step", json={"session_id": reset.json()["session_id"], "action": 1})
        assert step.status_code == 200, step.text
        assert base64.b64decode(step.json()["info"]["packet"]) == PACKET


def test_a_reset_whose_reply_cannot_be_sent_leaves_no_session_behind() -> None:
    with live_server(OpaqueObservationEnv, max_sessions=2) as live, httpx.Client(timeout=30) as client:
        for _ in range(3):  # more than --max-sessions: none may stay behind to refuse the next
            reply = client.post(f"{live.url}/reset", json={})
            assert reply.status_code == 500
            assert reply.json()["error"]["type"] == "EnvServerError"
        assert len(live.service.sessions) == 0
        assert client.get(f"{live.url}/sessions").json() == []


def test_openapi_document_is_valid_openapi_3_1() -> None:
    service = EnvService(BytesInfoEnv, env_name="test", idle_timeout=None)
    try:
        doc = TestClient(create_app(service)).get("/openapi.json").json()
    finally:
        service.shutdown()
    assert doc["openapi"].startswith("3.1")
    openapi_spec_validator.validate(doc)  # raises on 3.2-only keywords such as itemSchema
    events = doc["paths"]["/web/events"]["get"]["responses"]["200"]["content"]["text/event-stream"]
    assert "schema" in events and "itemSchema" not in events


def test_pool_web_openapi_document_is_valid_openapi_3_1() -> None:
    from openenv_gym.cli.start import serve_pool_web

    url, stop = serve_pool_web([], "openenv_gym pool test")
    try:
        doc = httpx.get(url.replace("/web", "/openapi.json"), timeout=30).json()
    finally:
        stop()
    openapi_spec_validator.validate(doc)
