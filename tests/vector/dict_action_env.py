"""A Gym env with a Dict action space holding Text (no pydantic model: its worker checks actions
with ``action_space.contains``), registered on import (workers import it by
``env_id="tests.vector.dict_action_env:OpenEnvTest/DictAct-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class DictAct(gym.Env):
    """Reward: the text's length plus the choice; truncates after 3 steps."""

    observation_space = spaces.Box(0, 100, (1,), np.float32)
    action_space = spaces.Dict({"word": spaces.Text(4, min_length=1, charset="abc"),
                                "choice": spaces.Discrete(3)})

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return (np.full(1, self.t, np.float32), float(len(action["word"]) + action["choice"]),
                False, self.t >= 3, {})


ENV_ID = "OpenEnvTest/DictAct-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=DictAct)
