"""Git-v0 refuses an unknown options['task'] as the caller's input (InvalidRequestError, HTTP
400), as Coding-v0 refuses options['problem'], and the session stays usable (tests/envs/)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.errors import EnvServerError, InvalidRequestError


def test_unknown_task_option_is_a_request_error_and_the_episode_goes_on() -> None:
    env = gym.make("OpenEnv/Git-v0", provider="process", task="create-branch")
    try:
        env.reset(seed=0)
        for bad in ("no-such-task", ["create-branch"], 5):
            with pytest.raises(InvalidRequestError, match="options\\['task'\\]") as info:
                env.reset(options={"task": bad})
            assert not isinstance(info.value, EnvServerError)
        obs, *_ = env.step({"command": "git status --short", "workdir": ""})
        assert "feature/login" in obs["instruction"]
    finally:
        env.close()
