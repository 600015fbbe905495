"""A Gym env whose MultiDiscrete actions are int32, registered on import (workers import it by
``env_id="tests.vector.int32_action_env:OpenEnvTest/Int32Act-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Int32Act(gym.Env):
    """Reward: the sum of the action; refuses an action outside its space, as an env checker would."""

    observation_space = spaces.Box(-1, 1, (2,), np.float32)
    action_space = spaces.MultiDiscrete([3, 3], dtype=np.int32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        return np.zeros(2, np.float32), float(np.sum(action)), False, False, {}


ENV_ID = "OpenEnvTest/Int32Act-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=Int32Act)
