"""A Gym env whose Box action holds 5 million numbers (a float64 row of it is 40 MB as sent),
registered on import (workers import it by
``env_id="tests.vector.big_box_env:OpenEnvTest/BigBox-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

SIZE = 5_000_000


class BigBox(gym.Env):
    """Reward: the action's first number; observation: the step count."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float32)
    action_space = spaces.Box(-1, 1, (SIZE,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(1, self.t, np.float32), float(action[0]), False, False, {}


ENV_ID = "OpenEnvTest/BigBox-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=BigBox)
