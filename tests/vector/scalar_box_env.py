"""A Gym env whose Box action has shape (), registered on import (workers import it by
``env_id="tests.vector.scalar_box_env:OpenEnvTest/ScalarBox-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ScalarBox(gym.Env):
    """Observation and reward: the action as a Python float (so float32 rounding shows)."""

    observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float64)
    action_space = spaces.Box(-10, 10, (), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1), {}

    def step(self, action):
        value = float(action)
        return np.array([value]), value, False, False, {}


ENV_ID = "OpenEnvTest/ScalarBox-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=ScalarBox)
