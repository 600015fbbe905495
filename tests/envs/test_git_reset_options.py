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


def test_a_task_option_lasts_one_episode_and_a_cd_one_step() -> None:
    """As the README says: options['task'] picks the task of that episode only, and each step
    is a new shell in its workdir (a model's ``cd`` does not carry over)."""
    env = gym.make("OpenEnv/Git-v0", provider="process", task="create-branch")
    try:
        _, info = env.reset(seed=0, options={"task": "fix-tag"})
        assert info["task"] == "fix-tag"
        obs, *_ = env.step({"command": "mkdir -p sub && cd sub && pwd", "workdir": ""})
        assert obs["output"].rstrip().endswith("/repo/sub")
        obs, *_ = env.step({"command": "pwd", "workdir": ""})
        assert obs["output"].rstrip().endswith("/repo")
        _, info = env.reset()
        assert info["task"] == "create-branch"
    finally:
        env.close()
