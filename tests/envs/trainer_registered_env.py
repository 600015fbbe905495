"""An env whose id only importing this module registers, as ``import ale_py`` registers
``ALE/*``: a worker's Gymnasium knows it only if the worker imports this module."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_ID = "OpenEnvTest/TrainerRegistered-v0"


class TrainerRegisteredEnv(gym.Env):
    """Counts its steps; enough to see the served env is this one."""

    observation_space = spaces.Box(0, 100, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(1, self.t, np.float32), float(action), False, False, {}


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=f"{__name__}:TrainerRegisteredEnv")
