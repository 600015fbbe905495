"""Gym envs whose reset raises, registered on import (workers import them by
``env_id="tests.vector.reset_raise_env:OpenEnvTest/ResetRaise-v0"``, or ``AutoresetRaise-v0``).
ResetRaise's episodes run until a time limit ends them, AutoresetRaise's end after two steps
(so an autoreset is the reset that raises); their observation counts the episode's steps."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ResetRaise(gym.Env):
    """Reset with ``seed=13`` raises ``ValueError`` (the episode running goes on)."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float64)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        if seed == 13:
            raise ValueError("reset refused for seed 13")
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1), {}

    def step(self, action):
        self.steps += 1
        return np.array([float(self.steps)]), 1.0, False, False, {}


class AutoresetRaise(ResetRaise):
    """Episodes end after two steps; the second reset raises ``ValueError`` (later ones work)."""

    def __init__(self) -> None:
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        if self.resets == 2:
            raise ValueError("second reset refused")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, _, truncated, info = super().step(action)
        return obs, reward, self.steps >= 2, truncated, info


ENV_ID = "OpenEnvTest/ResetRaise-v0"
AUTORESET_RAISE_ID = "OpenEnvTest/AutoresetRaise-v0"
for env_id, entry_point in ((ENV_ID, ResetRaise), (AUTORESET_RAISE_ID, AutoresetRaise)):
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=entry_point)
