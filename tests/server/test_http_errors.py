"""Error replies as a non-Python client meets them (curl, a generated client): what they quote
of the request, their status and headers (tests/server/)."""

from __future__ import annotations

import gzip
from typing import Iterator

import httpx
import pytest

from openenv_gym.envs.echo.env import EchoEnv
from tests.server.live import Live, live_server


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_server(EchoEnv) as served:
        yield served


# -- what an error quotes of the request ------------------------------------------------------
@pytest.mark.parametrize("method, path, kwargs, status", [
    pytest.param("POST", "/step", {"json": {"session_id": "s" * 1_000_000, "action": {"message": "hi"}}},
                 404, id="step-session"),
    pytest.param("POST", "/reset", {"json": {"session_id": "s" * 1_000_000}}, 404, id="reset-session"),
    pytest.param("GET", "/state", {"params": {"session_id": "s" * 50_000}}, 404, id="state-session"),
    pytest.param("DELETE", "/sessions/" + "s" * 50_000, {}, 404, id="delete-session"),
    pytest.param("POST", "/step", {"json": {"session_id": "x", "action": 0, "k" * 1_000_000: 1}},
                 422, id="unknown-field"),
    pytest.param("GET", "/" + "p" * 50_000, {}, 404, id="unknown-path"),
    pytest.param("GET", "/sessions/" + "p" * 50_000, {}, 405, id="wrong-method"),
])
def test_an_error_quotes_a_huge_id_name_or_path_cut_short(live, method, path, kwargs, status) -> None:
    # Before, a 1 MB session id or field name came back whole in the message.
    reply = httpx.request(method, live.url + path, timeout=60, **kwargs)
    assert reply.status_code == status, reply.text[:300]
    message = reply.json()["error"]["message"]
    assert len(message) < 1000, message[:300]
    assert "..." in message


def test_an_unknown_session_id_of_the_servers_own_form_is_quoted_whole(live) -> None:
    sid = "0123456789abcdef" * 2  # as uuid4().hex: what a client copies from a reset
    reply = httpx.post(live.url + "/step", json={"session_id": sid, "action": {"message": "x"}}, timeout=30)
    assert reply.status_code == 404 and f"no session '{sid}'" in reply.json()["error"]["message"]
    reply = httpx.delete(f"{live.url}/sessions/{sid}", timeout=30)
    assert reply.json()["error"]["message"] == f"no session '{sid}' to close"


# -- a missing field says what it is ----------------------------------------------------------
@pytest.mark.parametrize("body, expected", [
    pytest.param({"action": {"message": "hi"}},
                 "session_id: Field required (the session_id a POST /reset returned; a reset without "
                 "one starts a session)", id="step-without-session"),
    pytest.param({"session_id": "x"},
                 "action: Field required (the action, shaped as GET /spec's action_space / action_schema)",
                 id="step-without-action"),
])
def test_a_missing_body_field_is_named_with_what_it_is(live, body, expected) -> None:
    # OpenEnv's /step takes {"action": ...} alone (a fresh env per request); here an episode
    # lives in a session, and "session_id: Field required" did not say where one comes from.
    reply = httpx.post(live.url + "/step", json=body, timeout=30)
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"] == {"type": "InvalidRequestError", "message": expected}


# -- a compressed body -----------------------------------------------------------------------
@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_compressed_body_is_a_415_naming_the_encoding(live, coding) -> None:
    # Before: read as JSON text, refused 422 as "not UTF-8 text", naming neither cause nor fix.
    body = gzip.compress(b'{"seed": 1}') if coding == "gzip" else b"\x78\x9c\x03\x00"
    before = len(live.service.sessions)
    with httpx.Client(timeout=30) as client:
        reply = client.post(live.url + "/reset", content=body, headers={
            "content-type": "application/json", "content-encoding": coding})
        assert reply.status_code == 415, reply.text
        assert reply.headers["accept-encoding"] == "identity"
        assert reply.json()["error"]["message"] == (
            f"the body is sent with Content-Encoding: {coding}, which this server does not "
            "decode; send it uncompressed")
        assert len(live.service.sessions) == before
        # The same connection serves on; an identity coding is no coding.
        again = client.post(live.url + "/reset", json={}, headers={"content-encoding": "identity"})
        assert again.status_code == 200, again.text
        client.delete(f"{live.url}/sessions/{again.json()['session_id']}")


# -- 405 and its Allow header ---------------------------------------------------------------
@pytest.mark.parametrize("method, path, allow", [
    ("DELETE", "/health", "GET, HEAD"),
    ("POST", "/state", "GET, HEAD"),
    ("PUT", "/sessions", "GET, HEAD"),
    ("POST", "/docs", "GET, HEAD"),
    ("POST", "/openapi.json", "GET, HEAD"),
    ("GET", "/reset", "POST"),
    ("GET", "/sessions/abc", "DELETE"),
    ("PUT", "/web/events", "GET"),  # a stream: HEAD would wait it out, so it is refused
])
def test_a_405_allows_every_method_the_path_takes_head_included(live, method, path, allow) -> None:
    # Before, FastAPI's GET routes said "Allow: GET" though HEAD was answered there too.
    reply = httpx.request(method, live.url + path, timeout=30)
    assert reply.status_code == 405
    assert reply.headers["allow"] == allow
    assert reply.json()["error"]["message"].endswith(f"{path} takes {allow}")
    for other in allow.split(", "):
        answered = httpx.request(other, live.url + path, timeout=30)
        assert answered.status_code != 405, (other, path)


def test_each_error_status_in_the_docs_shows_the_error_class_it_answers_with(live) -> None:
    # Before, every status's example (a 404 and a 500 too) named InvalidActionError.
    doc = httpx.get(live.url + "/openapi.json", timeout=30).json()
    step = doc["paths"]["/step"]["post"]["responses"]
    shown = {status: step[status]["content"]["application/json"]["example"]["error"]["type"]
             for status in ("404", "409", "422", "500")}
    assert shown == {"404": "SessionNotFoundError", "409": "ResetNeededError",
                     "422": "InvalidActionError", "500": "EnvServerError"}
    reply = httpx.post(live.url + "/step", json={"session_id": "nope", "action": {"message": "x"}}, timeout=30)
    assert reply.json()["error"]["type"] == shown[str(reply.status_code)]
