"""A binary request's error quotes what the caller sent cut short: a huge op, slice id,
attribute name or field name (megabytes, from a buggy or hostile client) came back whole in
the reply, as the HTTP errors' session ids and field names did."""

from __future__ import annotations

from typing import Any

import pytest

from openenv_gym.envs.echo.env import EchoEnv
from openenv_gym.server.service import EnvService

HUGE = "x" * 1_000_000


@pytest.fixture
def service() -> Any:
    served = EnvService(EchoEnv)
    yield served
    served.shutdown()


@pytest.mark.parametrize("request_", [
    {"op": HUGE},
    {"op": "slice_step", "slice": HUGE},
    {"op": "get_attr", "name": HUGE},  # an identifier: the env's AttributeError named it whole
    {"op": "get_attr", "name": "x " * 500_000},
], ids=["op", "slice", "name", "not-a-name"])
def test_an_error_quotes_a_huge_value_cut_short(service: Any, request_: dict[str, Any]) -> None:
    sid = service.handle({"op": "reset"})["sid"]
    reply = service.handle({**request_, "sid": sid})
    assert reply["ok"] is False and reply["error"]["type"] == "InvalidRequestError"
    message = reply["error"]["message"]
    assert len(message) < 400, message[:200]
    assert "x" * 8 in message or "x x x x" in message  # still shows what it was

