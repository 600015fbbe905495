"""A Gym env with a MultiBinary action space, registered on import (workers import it by
``env_id="tests.vector.multibinary_env:OpenEnvTest/MultiBinaryAct-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class MultiBinaryAct(gym.Env):
    """Reward: how many bits the action sets; refuses an action outside its space, as an
    env checker would."""

    observation_space = spaces.Box(-1, 1, (2,), np.float32)
    action_space = spaces.MultiBinary(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        self.t += 1
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return obs, float(np.sum(action)), False, self.t >= 5, {}


ENV_ID = "OpenEnvTest/MultiBinaryAct-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=MultiBinaryAct)
