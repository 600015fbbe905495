"""Gym-v0's served env is made as ``gym.make`` makes it locally."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.envs.gym.env import GymEnv


class _NoRenderMode(gym.Env):
    """An env whose constructor takes no ``render_mode``, as many hand-written ones."""

    observation_space = spaces.Box(0, 2, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, size: int = 1) -> None:
        self.size = size

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.full(1, self.size, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, True, False, {}


@pytest.fixture
def no_render_mode_id():
    env_id = "OpenEnvTest/NoRenderMode-v0"
    gym.register(env_id, entry_point=_NoRenderMode)
    yield env_id
    del gym.registry[env_id]


def test_an_env_without_render_mode_is_made_as_locally(no_render_mode_id: str) -> None:
    local = gym.make(no_render_mode_id, size=2)  # works locally: so must it served
    served = GymEnv(no_render_mode_id, size=2)
    try:
        assert served.reset(seed=0)[0].tolist() == local.reset(seed=0)[0].tolist() == [2.0]
    finally:
        served.close()
        local.close()


def test_a_render_mode_still_reaches_the_env() -> None:
    served = GymEnv("CartPole-v1", render_mode="rgb_array")
    try:
        served.reset(seed=0)
        assert served.render().shape == (400, 600, 3)
    finally:
        served.close()
