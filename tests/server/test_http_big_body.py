"""A large JSON body is parsed in a worker thread, not on the event loop.

QA: while one ~60 MB ``POST /step`` was parsed, every other request waited, ``/health``
included (a body of floats: seconds, as each float passes through the server's check).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import httpx
import pytest

from openenv_gym.envs.echo.env import EchoEnv
from openenv_gym.server import http_errors
from tests.server.live import live_server

#: Padding that makes a body large (over the size parsed inline, 1 MiB).
PAD = "x" * (4 << 20)
HEADERS = {"content-type": "application/json"}


def test_health_answers_while_a_large_body_is_parsed(monkeypatch) -> None:
    entered, release = threading.Event(), threading.Event()
    real = http_errors._finite_float

    def held(text: str) -> float:
        # The parse stops here, at a known stage, until the test lets it go on.
        if text == "0.125":
            entered.set()
            release.wait(60)  # a hang guard only: the test releases it
        return real(text)

    monkeypatch.setattr(http_errors, "_finite_float", held)
    body = json.dumps({"options": {"pad": PAD, "held": 0.125}})
    replies: list[httpx.Response] = []
    with live_server(EchoEnv) as live, httpx.Client(timeout=30) as client:
        sender = threading.Thread(target=lambda: replies.append(
            httpx.post(f"{live.url}/reset", content=body, headers=HEADERS, timeout=120)))
        sender.start()
        try:
            assert entered.wait(60), "the server never parsed the body"
            try:
                health = client.get(f"{live.url}/health")
            except httpx.TimeoutException:
                pytest.fail("/health went unanswered while a large body was parsed")
            assert health.status_code == 200
        finally:
            release.set()
            sender.join(120)
    assert replies[0].status_code == 200, replies[0].text


@pytest.mark.parametrize("value, says", [
    (b"NaN", "NaN is not a JSON number"),
    (b"1e309", "beyond a 64-bit float's range"),
    (b"[" * 5000 + b"]" * 5000, "nests arrays or objects too deeply"),
    (b"1" * 5000, "integer longer than the server reads"),
    (b'"\xff"', "not UTF-8 text (invalid start byte at byte "),
    (b"{1: 2}", "Expecting property name enclosed in double quotes"),
])
def test_a_large_body_that_is_not_standard_json_is_refused_as_a_small_one_is(
        value: bytes, says: str) -> None:
    def reply(pad: str) -> dict[str, Any]:
        body = b'{"options": {"pad": "' + pad.encode() + b'", "bad": ' + value + b"}}"
        answer = client.post(f"{live.url}/reset", content=body, headers=HEADERS)
        assert answer.status_code == 422, answer.text
        return answer.json()["error"]

    with live_server(EchoEnv) as live, httpx.Client(timeout=60) as client:
        small, large = reply(""), reply(PAD)
        assert large["type"] == small["type"] == "InvalidRequestError"
        assert says in small["message"] and says in large["message"]
        # The same words, but for the positions the padding moved.
        assert re.sub(r"\d+", "N", large["message"]) == re.sub(r"\d+", "N", small["message"])
        assert client.get(f"{live.url}/health").status_code == 200
