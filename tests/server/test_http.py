"""The HTTP/JSON front, driven with requests like any non-Python client would."""

from __future__ import annotations

import gymnasium as gym
import pytest
import requests

import openenv_gym
from tests.conftest import ServedEnv
from tests.security.helpers import wait_until


def _post(server, path: str, body: object) -> requests.Response:
    return requests.post(server.http + path, json=body, timeout=10)


def test_whole_episode_over_http_keeps_the_session(served_echo) -> None:
    r = _post(served_echo, "/reset", {"seed": 3})
    assert r.status_code == 200
    sid = r.json()["session_id"]
    assert r.json()["observation"] == {"echo": "", "length": 0}
    total = 0.0
    for i in range(5):
        r = _post(served_echo, "/step", {"session_id": sid, "action": {"message": "ab" * (i + 1)}})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["observation"] == {"echo": "ab" * (i + 1), "length": 2 * (i + 1)}
        total += body["reward"]
    state = requests.get(served_echo.http + "/state", params={"session_id": sid}, timeout=10).json()
    assert state["step_count"] == 5 and state["episode_return"] == pytest.approx(total)
    assert state["last_message"] == "ababababab"
    # Reset of the same session keeps its id and starts a new episode.
    r = _post(served_echo, "/reset", {"session_id": sid})
    assert r.json()["session_id"] == sid
    new_state = requests.get(served_echo.http + "/state", params={"session_id": sid}, timeout=10).json()
    assert new_state["step_count"] == 0 and new_state["episode_id"] != state["episode_id"]
    assert requests.delete(f"{served_echo.http}/sessions/{sid}", timeout=10).status_code == 200
    assert _post(served_echo, "/step", {"session_id": sid, "action": {"message": "x"}}).status_code == 404


def test_spec_health_and_docs(served_echo) -> None:
    spec = requests.get(served_echo.http + "/spec", timeout=10).json()
    assert spec["action_space"]["type"] == "Dict"
    assert spec["action_schema"]["properties"]["message"]["maxLength"] == 65536
    health = requests.get(served_echo.http + "/health", timeout=10).json()
    assert health["status"] == "ok" and health["env"] == "echo"
    assert health["binary"] == served_echo.binary
    assert requests.get(served_echo.http + "/docs", timeout=10).status_code == 200
    paths = requests.get(served_echo.http + "/openapi.json", timeout=10).json()["paths"]
    assert {"/reset", "/step", "/state", "/spec", "/health", "/sessions/{session_id}"} <= set(paths)
    # A foreign Host gets 403 on every route (before any route runs): each documents it.
    assert {f"{method} {path}" for path, ops in paths.items() for method, op in ops.items()
            if "403" not in op["responses"]} == set()


@pytest.mark.parametrize(
    "body, status, kind",
    [
        ({"session_id": "SID", "action": {"message": 5}}, 422, "InvalidActionError"),
        ({"session_id": "SID", "action": {"msg": "x"}}, 422, "InvalidActionError"),
        ({"session_id": "SID", "action": "text"}, 422, "InvalidActionError"),
        ({"session_id": "SID"}, 422, "InvalidRequestError"),
        ({"session_id": "unknown", "action": {"message": "x"}}, 404, "SessionNotFoundError"),
        ({"session_id": "SID", "action": {"message": "x" * 70000}}, 422, "InvalidActionError"),
    ],
)
def test_bad_requests_get_4xx_and_the_session_continues(served_echo, body, status, kind) -> None:
    sid = _post(served_echo, "/reset", {}).json()["session_id"]
    if body.get("session_id") == "SID":
        body = {**body, "session_id": sid}
    r = _post(served_echo, "/step", body)
    assert r.status_code == status, r.text
    assert r.json()["error"]["type"] == kind
    ok = _post(served_echo, "/step", {"session_id": sid, "action": {"message": "fine"}})
    assert ok.status_code == 200 and ok.json()["observation"]["echo"] == "fine"


def test_malformed_json_is_a_4xx(served_echo) -> None:
    r = requests.post(served_echo.http + "/step", data=b"{not json", timeout=10,
                      headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidRequestError"


def test_session_limit_is_a_clear_429(served_echo) -> None:
    sids = [_post(served_echo, "/reset", {}).json()["session_id"] for _ in range(4)]
    r = _post(served_echo, "/reset", {})
    assert r.status_code == 429 and "limit" in r.json()["error"]["message"]
    requests.delete(f"{served_echo.http}/sessions/{sids[0]}", timeout=10)
    assert _post(served_echo, "/reset", {}).status_code == 200


def test_idle_sessions_expire() -> None:
    server = ServedEnv("echo", "--idle-timeout", "1")  # not served_echo: its sessions must last
    try:
        sid = _post(server, "/reset", {}).json()["session_id"]
        wait_until(lambda: not any(s["session_id"] == sid for s in requests.get(
            server.http + "/sessions", timeout=10).json()), 60, 0.2)
        r = _post(server, "/step", {"session_id": sid, "action": {"message": "x"}})
        assert r.status_code == 404 and "expired" in r.json()["error"]["message"]
    finally:
        server.stop()


def test_python_client_attaches_with_base_url(served_echo) -> None:
    env = gym.make("OpenEnv/Echo-v0", base_url=served_echo.http)
    try:
        env.reset(seed=0)
        assert env.step({"message": "via binary"})[0]["echo"] == "via binary"
        sessions = requests.get(served_echo.http + "/sessions", timeout=10).json()
        assert [s["step_count"] for s in sessions] == [1]
    finally:
        env.close()
    assert requests.get(served_echo.http + "/sessions", timeout=10).json() == []


def test_attach_to_nothing_is_a_clear_error() -> None:
    with pytest.raises(openenv_gym.WorkerConnectionError, match="openenv-gym serve"):
        gym.make("OpenEnv/Echo-v0", base_url="http://127.0.0.1:9", timeout=2)
    for bad in ("127.0.0.1:8000", "unix://", "tcp://127.0.0.1", "http://:8000"):  # checked, never sent
        with pytest.raises(openenv_gym.InvalidRequestError, match="like 'http://127.0.0.1:8000'"):
            gym.make("OpenEnv/Echo-v0", base_url=bad)
    # A worker's own binary address is taken as it is; nothing listens at this one.
    with pytest.raises(openenv_gym.WorkerConnectionError, match="cannot connect"):
        gym.make("OpenEnv/Echo-v0", base_url="unix:///tmp/openenv-gym-no-such-worker.sock", timeout=2)


def test_the_reset_body_docs_offer_first_starts_a_session(served_echo) -> None:
    # /docs' "Try it out" sends the first example as it is; before, Swagger UI filled in
    # {"session_id": "string", ...} from the schema, and the reset answered 404.
    doc = requests.get(served_echo.http + "/openapi.json", timeout=10).json()
    examples = doc["paths"]["/reset"]["post"]["requestBody"]["content"]["application/json"]["examples"]
    first, *others = examples.values()
    r = _post(served_echo, "/reset", first["value"])
    assert r.status_code == 200, r.text
    for example in others:
        body = example["value"]
        if "session_id" in body:  # shows where an id goes; a real one makes it work
            body = {**body, "session_id": r.json()["session_id"]}
        assert _post(served_echo, "/reset", body).status_code == 200, example
