"""The HTTP front under what QA found: env bugs, slow steps, ended episodes, odd bodies.

Each test runs a real uvicorn server in this process (:mod:`tests.server.live`) whose test
env's steps wait at a gate the test opens, so "while a step is in flight" needs no timing.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from typing import Any, Iterator

import httpx
import pytest

from openenv_gym.envs.echo.env import EchoEnv
from openenv_gym.protocol.wire import MAX_FRAME
from tests.server.live import MINUS_INF, PLAIN, WAIT, Gate, GateEnv, live_server


def _strict_json(text: str) -> Any:
    """Parse as standard JSON: NaN/Infinity (which browsers' JSON.parse refuse) fail here too."""
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def _step_in_thread(client: httpx.Client, url: str, sid: str, action: Any, out: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: out.append(
        client.post(f"{url}/step", json={"session_id": sid, "action": action}, timeout=120)))
    thread.start()
    return thread


@pytest.fixture
def gated() -> Iterator[tuple[Gate, Any]]:
    gate = Gate()
    with live_server(lambda: GateEnv(gate), max_sessions=50) as live:
        yield gate, live


# -- 1: an env's exception -------------------------------------------------------------------
def test_an_env_exception_is_a_500_reply_and_the_keep_alive_connection_serves_on(gated, caplog) -> None:
    _, live = gated
    caplog.set_level(logging.INFO)
    with httpx.Client(timeout=30) as client:
        first = client.post(f"{live.url}/reset", json={"options": {"raise": "low must be a number"}})
        assert first.status_code == 500
        assert first.json() == {"error": {"type": "EnvServerError", "builtin": "ValueError",
                                          "message": "ValueError: low must be a number"}}
        after = client.get(f"{live.url}/health")
        assert after.status_code == 200
        # The very same connection answered both.
        peer = [r.extensions["network_stream"].get_extra_info("client_addr") for r in (first, after)]
        assert peer[0] == peer[1]
    logged = [r for r in caplog.records if r.exc_info]
    assert [r.name for r in logged] == ["openenv_gym.http"]  # once, by us; not uvicorn's reset
    assert "ValueError" in logged[0].getMessage() and "/reset" in logged[0].getMessage()
    assert live.service.sessions.sessions() == []  # the refused first reset left no session


# -- 3: the end of an episode ----------------------------------------------------------------
def test_a_step_after_the_episode_ended_is_a_409_until_reset() -> None:
    with live_server(lambda: EchoEnv(max_steps=2)) as live, httpx.Client(timeout=30) as client:
        sid = client.post(f"{live.url}/reset", json={}).json()["session_id"]
        for _ in range(2):
            last = client.post(f"{live.url}/step", json={"session_id": sid, "action": {"message": "ab"}})
        assert last.json()["truncated"] is True
        for _ in range(2):
            refused = client.post(f"{live.url}/step", json={"session_id": sid, "action": {"message": "ab"}})
            assert refused.status_code == 409
            error = refused.json()["error"]
            assert error["type"] == "ResetNeededError"
            assert "ended at step 2" in error["message"] and "call reset" in error["message"]
        # Nothing was paid or recorded past the end.
        state = client.get(f"{live.url}/state", params={"session_id": sid}).json()
        assert state["step_count"] == 2 and state["episode_return"] == pytest.approx(0.4)
        [view] = client.get(f"{live.url}/web/state").json()["sessions"]
        assert view["returns"] == [0.4] and [h["step"] for h in view["history"]] == [2, 1]
        assert client.post(f"{live.url}/reset", json={"session_id": sid}).status_code == 200
        again = client.post(f"{live.url}/step", json={"session_id": sid, "action": {"message": "ab"}})
        assert again.status_code == 200 and again.json()["reward"] == pytest.approx(0.2)


# -- 4: non-finite numbers in JSON -----------------------------------------------------------
def test_an_infinite_reward_is_null_in_step_web_state_and_web_events(gated) -> None:
    _, live = gated
    with httpx.Client(timeout=30) as client:
        sid = client.post(f"{live.url}/reset", json={}).json()["session_id"]
        step = client.post(f"{live.url}/step", json={"session_id": sid, "action": MINUS_INF})
        assert _strict_json(step.text)["reward"] is None
        [view] = _strict_json(client.get(f"{live.url}/web/state").text)["sessions"]
        assert view["episode_return"] is None and view["history"][0]["reward"] is None
        with client.stream("GET", f"{live.url}/web/events") as events:
            assert events.headers["content-type"].startswith("text/event-stream")
            data = next(line for line in events.iter_lines() if line.startswith("data:"))
        [session] = _strict_json(data.removeprefix("data:").strip())["sessions"]
        assert session["episode_return"] is None and session["history"][0]["reward"] is None


# -- 5, 6, 12: a slow step holds up nothing else ---------------------------------------------
def test_a_step_in_flight_freezes_neither_the_web_view_nor_other_sessions(gated) -> None:
    gate, live = gated
    with httpx.Client(timeout=30) as client:
        slow, other = (client.post(f"{live.url}/reset", json={}).json()["session_id"] for _ in range(2))
        client.post(f"{live.url}/step", json={"session_id": slow, "action": PLAIN})
        client.get(f"{live.url}/web/state")  # renders the view once, before the slow step
        replies: list[httpx.Response] = []
        thread = _step_in_thread(client, live.url, slow, WAIT, replies)
        assert gate.wait_inside(1)
        assert client.post(f"{live.url}/step", json={"session_id": other, "action": PLAIN}).status_code == 200
        view = {s["id"]: s for s in client.get(f"{live.url}/web/state").json()["sessions"]}
        assert view[slow]["step_count"] == 1 and view[slow]["view"]["text"] == "after 1 steps"
        assert view[other]["step_count"] == 1
        with client.stream("GET", f"{live.url}/web/events") as events:
            data = next(line for line in events.iter_lines() if line.startswith("data:"))
        assert {s["id"] for s in json.loads(data[5:])["sessions"]} == {slow, other}
        listed = {s["session_id"]: s["step_count"] for s in client.get(f"{live.url}/sessions").json()}
        assert listed == {slow: 1, other: 1}
        assert gate.inside == 1 and not replies  # all of it answered while the step waited
        gate.open()
        thread.join(60)
        assert replies[0].status_code == 200
        view = {s["id"]: s for s in client.get(f"{live.url}/web/state").json()["sessions"]}
        assert view[slow]["step_count"] == 2 and view[slow]["view"]["text"] == "after 2 steps"


def test_health_answers_while_more_steps_are_in_flight_than_anyios_default_40_threads(gated) -> None:
    gate, live = gated
    n = 45
    limits = httpx.Limits(max_connections=n + 5, max_keepalive_connections=n + 5)
    with httpx.Client(timeout=120, limits=limits) as client:
        sids = [client.post(f"{live.url}/reset", json={}).json()["session_id"] for _ in range(n)]
        replies: list[httpx.Response] = []
        threads = [_step_in_thread(client, live.url, sid, WAIT, replies) for sid in sids]
        try:
            assert gate.wait_inside(n), f"only {gate.inside} of {n} steps started"
            health = client.get(f"{live.url}/health", timeout=30)
            assert health.status_code == 200 and health.json()["sessions"] == n
            assert gate.inside == n and not replies  # every step still in flight
        finally:
            gate.open()
            for thread in threads:
                thread.join(60)
        assert [r.status_code for r in replies] == [200] * n


def test_delete_returns_at_once_and_the_env_closes_when_its_step_ends(gated) -> None:
    gate, live = gated
    with httpx.Client(timeout=30) as client:
        sid = client.post(f"{live.url}/reset", json={}).json()["session_id"]
        env = live.envs[0]
        replies: list[httpx.Response] = []
        thread = _step_in_thread(client, live.url, sid, WAIT, replies)
        assert gate.wait_inside(1)
        assert client.delete(f"{live.url}/sessions/{sid}").json() == {"closed": sid}
        assert client.get(f"{live.url}/sessions").json() == []
        assert gate.inside == 1 and not env.closed.is_set()  # the step is still in flight
        gate.open()
        thread.join(60)
        assert replies[0].status_code == 200  # the step in flight finished normally
        assert env.closed.wait(30)
        gone = client.post(f"{live.url}/step", json={"session_id": sid, "action": PLAIN})
        assert gone.status_code == 404


# -- 8: one error model, documented ------------------------------------------------------------
def test_openapi_documents_the_error_model_the_server_answers_with(gated) -> None:
    _, live = gated
    with httpx.Client(timeout=30) as client:
        api = client.get(f"{live.url}/openapi.json").json()
        assert "HTTPValidationError" not in api["components"]["schemas"]
        assert set(api["components"]["schemas"]["ErrorBody"]["properties"]) == {"error"}
        for path, methods in api["paths"].items():
            for method, operation in methods.items():
                for status, response in operation["responses"].items():
                    if status[0] in "45":
                        schema = response["content"]["application/json"]["schema"]
                        assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, method, status)
        assert {"400", "404", "409", "413", "422", "500"} <= set(api["paths"]["/step"]["post"]["responses"])
        assert {"404", "429", "500"} <= set(api["paths"]["/reset"]["post"]["responses"])
        events = api["paths"]["/web/events"]["get"]["responses"]["200"]["content"]
        assert list(events) == ["text/event-stream"]
        # What the framework itself refuses answers in the same shape.
        wrong_method = client.get(f"{live.url}/reset")
        assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"
        assert "takes POST" in wrong_method.json()["error"]["message"]
        unknown = client.get(f"{live.url}/nope")
        assert unknown.status_code == 404 and "no such path" in unknown.json()["error"]["message"]
        for reply in (wrong_method, unknown):
            assert set(reply.json()) == {"error"} and reply.json()["error"]["type"] == "InvalidRequestError"


# -- 9, 10: messages that say what to fix; strict parsing ----------------------------------
@pytest.mark.parametrize("content, headers, status, message", [
    (b'{"session_id": "x",, }', {"content-type": "application/json"}, 422,
     "the body is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 20"),
    (b'{"session_id": "x", "action": NaN}', {"content-type": "application/json"}, 422,
     "NaN is not a JSON number; send a finite number"),
    (b'{"session_id": "x", "action": [1e309]}', {"content-type": "application/json"}, 422,
     "1e309 is beyond a 64-bit float's range (it would be read as infinity); send a finite number"),
    pytest.param(b'{"session_id": "x", "action": -1' + b"0" * 5000 + b'}',
                 {"content-type": "application/json"}, 422,
                 "it holds an integer longer than the server reads (4300 digits at most)",
                 id="5001-digit-integer"),
    (b'{"session_id": "x", "action": "\xff"}', {"content-type": "application/json"}, 422,
     "not valid JSON: it is not UTF-8"),
    (b'{"session_id": "x", "action": 0}', {}, 415, "Content-Type: application/json"),
    (b'{"session_id": "x", "action": 0}', {"content-type": "text/plain"}, 415,
     "(this request's Content-Type: text/plain)"),
    (b'{"session_id": "x", "action": 0, "seed": 1}', {"content-type": "application/json"}, 422,
     "unknown field 'seed' in the body; /step takes session_id, action"),
])
def test_bad_step_bodies_say_what_to_fix(gated, content, headers, status, message) -> None:
    _, live = gated
    reply = httpx.post(f"{live.url}/step", content=content, headers=headers, timeout=30)
    assert reply.status_code == status
    assert reply.json()["error"]["type"] == "InvalidRequestError"
    assert message in reply.json()["error"]["message"]


@pytest.mark.parametrize("body, message", [
    ({"sed": 1}, "unknown field 'sed' in the body; /reset takes session_id, seed, options"),
    ({"seed": True}, "seed: Input should be a valid integer, got true"),
    ({"seed": 1.0}, "seed: Input should be a valid integer, got 1.0"),
    ({"seed": -1}, "seed: Input should be greater than or equal to 0"),
])
def test_reset_refuses_unknown_fields_and_non_integer_seeds(gated, body, message) -> None:
    _, live = gated
    reply = httpx.post(f"{live.url}/reset", json=body, timeout=30)
    assert reply.status_code == 422 and message in reply.json()["error"]["message"]
    assert live.service.sessions.sessions() == []


# -- 11: the body size limit ----------------------------------------------------------------
def _raw_request(url: str, head: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def test_a_body_over_the_frame_limit_is_refused_before_it_is_read(gated) -> None:
    _, live = gated
    # Only the headers are sent: the answer comes without waiting for 64 MiB.
    reply = _raw_request(live.url, b"POST /step HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: %d\r\n\r\n" % (MAX_FRAME + 1))
    head, body = reply.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 413")
    error = json.loads(body)["error"]
    assert error["type"] == "InvalidRequestError" and str(MAX_FRAME) in error["message"]


def test_a_chunked_body_is_cut_off_at_the_limit() -> None:
    gate = Gate()
    with live_server(lambda: GateEnv(gate), max_body_size=1024) as live:
        chunks = iter([b'{"session_id": "x", "action": "', b"y" * 4096, b'"}'])  # no length: chunked
        reply = httpx.post(f"{live.url}/step", content=chunks, timeout=30,
                           headers={"content-type": "application/json"})
        assert reply.status_code == 413 and "1024 bytes" in reply.json()["error"]["message"]
        assert httpx.get(f"{live.url}/health", timeout=30).status_code == 200
