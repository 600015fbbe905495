"""A Gym env whose step with action 1 never returns (busy in Python, so its worker outlasts the
SIGTERM grace), registered on import (workers import it by
``env_id="tests.vector.hang_env:OpenEnvTest/Hang-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class Hang(gym.Env):
    """Action 0 steps at once; action 1 hangs the step for good."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        while action == 1:
            pass
        return np.zeros(1, np.float32), 0.0, False, False, {}


ENV_ID = "OpenEnvTest/Hang-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=Hang)
