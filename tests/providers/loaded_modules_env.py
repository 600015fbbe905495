"""A Gym env that tells which of the named modules its worker process has loaded, registered
on import (workers import it by ``env_id="tests.providers.loaded_modules_env:OpenEnvTest/LoadedModules-v0"``).

Its reset's info holds ``{"loaded": "name name ..."}``: those of ``modules`` (space-separated)
found in the worker's ``sys.modules``, so a test sees what a worker has loaded, what it
inherited from the fork server included.
"""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class LoadedModules(gym.Env):
    """Observation 0; reset's info names which of ``modules`` the worker has loaded."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, modules: str) -> None:
        self.modules = modules.split()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {"loaded": " ".join(m for m in self.modules if m in sys.modules)}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


ENV_ID = "OpenEnvTest/LoadedModules-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=LoadedModules)
