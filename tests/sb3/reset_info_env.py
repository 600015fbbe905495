"""An env whose reset info has a "_"-prefixed key and plain Python values (workers import it by
``env_id="tests.sb3.reset_info_env:OpenEnvTest/ResetInfo-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ResetInfo(gym.Env):
    observation_space = spaces.Box(-1, 1, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {"_internal": 3, "count": 1, "ok": True, "name": "start"}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, True, False, {}


ENV_ID = "OpenEnvTest/ResetInfo-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=ResetInfo)
