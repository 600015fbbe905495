"""render_mode='human' is refused where it would reach a worker (no display there); through
gym.make it still works, as Gymnasium's HumanRendering of the served rgb_array frames."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.errors import InvalidRequestError


def test_remote_env_refuses_human_render_mode() -> None:
    with pytest.raises(InvalidRequestError, match="render_mode='human' cannot be served"):
        openenv_gym.RemoteEnv("gym", env_id="CartPole-v1", provider="process", render_mode="human")


def test_vector_env_refuses_human_render_mode() -> None:
    with pytest.raises(InvalidRequestError, match="render_mode='human' cannot be served"):
        gym.make_vec("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process",
                     render_mode="human")


def test_gym_make_human_still_renders_served_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process", render_mode="human")
    try:
        assert isinstance(env, gym.wrappers.HumanRendering)
        assert env.unwrapped.render_mode == "rgb_array"
        env.reset(seed=0)
        env.step(np.int64(0))
    finally:
        env.close()
