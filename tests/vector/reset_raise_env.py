"""A Gym env whose reset with seed 13 raises, registered on import (workers import it by
``env_id="tests.vector.reset_raise_env:OpenEnvTest/ResetRaise-v0"``). Its episodes run until
a time limit ends them; its observation counts the episode's steps."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ResetRaise(gym.Env):
    """Reset with ``seed=13`` raises ``ValueError`` (the episode running goes on)."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float64)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        if seed == 13:
            raise ValueError("reset refused for seed 13")
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1), {}

    def step(self, action):
        self.steps += 1
        return np.array([float(self.steps)]), 1.0, False, False, {}


ENV_ID = "OpenEnvTest/ResetRaise-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=ResetRaise)
