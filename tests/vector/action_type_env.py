"""A Gym env that reports the type its ``step`` was handed, registered on import (workers import
it by ``env_id="tests.vector.action_type_env:OpenEnvTest/ActionType-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

SPACES = {"discrete": spaces.Discrete(3, start=-1), "multidiscrete": spaces.MultiDiscrete([3, 2]),
          "box": spaces.Box(-1, 1, (2,), np.float32)}


class ActionType(gym.Env):
    """Info ``"type"``: the type name and dtype of the action ``step`` got; reward ``action.sum()``
    (a numpy method: an env may call one on its action, as it may under Gymnasium's vector envs)."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, space: str = "discrete") -> None:
        self.action_space = SPACES[space]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        kind = f"{type(action).__name__} {getattr(action, 'dtype', None)}"
        return np.zeros(1, np.float32), float(action.sum()), False, False, {"type": kind}


ENV_ID = "OpenEnvTest/ActionType-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=ActionType)
