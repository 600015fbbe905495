"""A Gym env with a Tuple action space of two Discretes, registered on import (workers import
it by ``env_id="tests.sb3.tuple_action_env:OpenEnvTest/TupleAct-v0"``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class TupleAct(gym.Env):
    """Reward: ``10 * first + second``, so that a swapped action shows in the reward."""

    observation_space = spaces.Box(0, 1, (1,), np.float32)
    action_space = spaces.Tuple((spaces.Discrete(3), spaces.Discrete(3)))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action: tuple[int, int]):
        first, second = action
        return np.zeros(1, np.float32), float(10 * first + second), False, False, {}


ENV_ID = "OpenEnvTest/TupleAct-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=TupleAct)
