"""A Gym env whose Dict action holds a Box next to a Discrete (DictAct's episodes, another
action), registered on import (servers import it by
``env_id="tests.server.box_in_dict_env:OpenEnvTest/BoxInDict-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from tests.vector.toy_envs import DictAct

ENV_ID = "OpenEnvTest/BoxInDict-v0"


class BoxInDict(DictAct):
    """Reward: the sum of the Box part; truncates after 3 steps."""

    action_space = spaces.Dict({"choice": spaces.Discrete(3),
                                "force": spaces.Box(-1, 1, (2,), np.float32)})

    def step(self, action):
        obs, _, terminated, truncated, info = super().step({"word": "", "choice": 0})
        return obs, float(np.sum(action["force"])), terminated, truncated, info


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=BoxInDict)
