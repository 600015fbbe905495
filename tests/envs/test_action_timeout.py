"""Coding's and Git's action ``timeout`` takes a finite number only. pydantic's lax mode took
``"1"`` and ``true`` as 1.0 (over HTTP; the schema says number), and refused NaN and inf as not
"less than or equal to 3600". The worker's model and a vector client's check before it sends
(rebuilt from the worker's ``action_schema``) refuse the same, in the same words."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import httpx
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.base import Environment
from openenv_gym.envs.coding.env import CodingEnv
from openenv_gym.envs.git.env import GitEnv
from openenv_gym.errors import InvalidActionError
from openenv_gym.vector.precheck import action_checker
from tests.server.live import live_server

#: Timeouts both take: Python's numbers, and numpy's (what a trainer's arrays hand out).
TAKEN = [0, 1, 1.5, 3600, np.float32(2), np.float64(2.5), np.int64(3), np.uint8(4)]
#: Timeouts both refuse, and the words that say why.
REFUSED = [("1", "a valid number"), ("1.5", "a valid number"), (True, "a valid number"),
           (False, "a valid number"), (None, "a valid number"), ([1], "a valid number"),
           (float("nan"), "a finite number"), (float("inf"), "a finite number"),
           (-float("inf"), "a finite number"), (np.float32("nan"), "a finite number"),
           (-1, "greater than or equal to 0"), (3600.5, "less than or equal to 3600")]


def _refusal(env: Environment, action: dict[str, Any]) -> str | None:
    try:
        env.parse_action(action)
    except InvalidActionError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("make, field", [(CodingEnv, "code"), (GitEnv, "command")], ids=["coding", "git"])
def test_the_worker_and_the_vector_precheck_refuse_the_same_timeouts(make, field: str) -> None:
    env = make()
    try:
        # A strict, finite field leaves the model one a vector client may check (the earlier
        # fix's allow_inf_nan=False made it "None": nothing was checked before sending).
        assert env.action_check() == "schema"
        spec = {"action_check": "schema", "action_schema": env.action_model.model_json_schema()}
        precheck = action_checker(spec, env.action_space)
        assert precheck is not None
        for timeout in TAKEN:
            action = {field: "1", "timeout": timeout}
            assert _refusal(env, action) is None and precheck(action) is None, timeout
        for timeout, why in REFUSED:
            action = {field: "1", "timeout": timeout}
            refusal = _refusal(env, action)
            assert refusal == precheck(action), timeout
            assert refusal is not None and f"timeout: Input should be {why}" in refusal, (timeout, refusal)
    finally:
        env.close()


@pytest.mark.parametrize("env_id, field, source", [("OpenEnv/Coding-v0", "code", "print(1)"),
                                                   ("OpenEnv/Git-v0", "command", "echo 1")],
                         ids=["coding", "git"])
def test_a_timeout_that_is_no_finite_number_is_named_as_such(env_id: str, field: str, source: str) -> None:
    # Through a worker (the binary path): refused, named, and the session goes on.
    env = gym.make(env_id, provider="process")
    try:
        env.reset(seed=0)
        for timeout, why in [(float("nan"), "a finite number"), (float("inf"), "a finite number"),
                             ("1", "a valid number"), (True, "a valid number")]:
            with pytest.raises(InvalidActionError, match=f"timeout: Input should be {why}"):
                env.step({field: source, "timeout": timeout})
        for timeout in (np.float32(2), np.int64(3), 1, 1.5):  # still taken, as before
            _, _, terminated, _, _ = env.step({field: source, "timeout": timeout})
            assert not terminated
        assert env.unwrapped.call("state")["step_count"] == 4  # the refused ones never stepped
    finally:
        env.close()


def test_over_http_a_timeout_that_is_no_number_is_a_422_and_the_session_goes_on() -> None:
    with live_server(lambda: CodingEnv()) as live, httpx.Client(timeout=60) as client:
        sid = client.post(f"{live.url}/reset", json={}).json()["session_id"]

        def step(timeout: Any) -> httpx.Response:
            return client.post(f"{live.url}/step",
                               json={"session_id": sid, "action": {"code": "print(1)", "timeout": timeout}})

        for bad in ("1", "1.5", True, False, None, [1]):
            reply = step(bad)
            assert reply.status_code == 422, (bad, reply.text)
            error = reply.json()["error"]
            assert error["type"] == "InvalidActionError"
            assert "timeout: Input should be a valid number" in error["message"], (bad, error)
        for good in (1, 1.5):
            reply = step(good)
            assert reply.status_code == 200 and reply.json()["observation"]["stdout"] == "1\n", reply.text
        state = client.get(f"{live.url}/state", params={"session_id": sid}).json()
        assert state["step_count"] == 2
