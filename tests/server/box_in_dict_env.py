"""A Gym env whose Dict action holds a Box next to a Discrete, registered on import (servers
import it by ``env_id="tests.server.box_in_dict_env:OpenEnvTest/BoxInDict-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_ID = "OpenEnvTest/BoxInDict-v0"


class BoxInDict(gym.Env):
    """Reward: the sum of the Box part; truncates after 3 steps."""

    observation_space = spaces.Box(0, 100, (1,), np.float32)
    action_space = spaces.Dict({"choice": spaces.Discrete(3),
                                "force": spaces.Box(-1, 1, (2,), np.float32)})

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(1, self.t, np.float32), float(np.sum(action["force"])), False, self.t >= 3, {}


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=BoxInDict)
