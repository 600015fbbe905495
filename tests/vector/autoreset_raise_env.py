"""A Gym env whose second reset raises, registered on import (workers import it
by ``env_id="tests.vector.autoreset_raise_env:OpenEnvTest/AutoresetRaise-v0"``). Its episodes
end after two steps, so an autoreset is the reset that raises."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class AutoresetRaise(gym.Env):
    """Episodes end after two steps; the second reset raises ``ValueError`` (later ones work)."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float64)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        if self.resets == 2:
            raise ValueError("second reset refused")
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1), {}

    def step(self, action):
        self.steps += 1
        return np.array([float(self.steps)]), 1.0, self.steps >= 2, False, {}


ENV_ID = "OpenEnvTest/AutoresetRaise-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=AutoresetRaise)
