"""A Gym env whose constructor waits until a gate file exists, registered on import (workers
import it by ``env_id="tests.providers.gated_start_env:OpenEnvTest/GatedStart-v0"``): its
workers are started (running, not yet serving) for as long as a test needs them to be.
"""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class GatedStart(gym.Env):
    """Observation 0, reward 1 per step; its constructor returns once ``gate_file`` exists
    (and first makes ``entered_file``, when given: the test then knows it is waiting)."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, gate_file: str, entered_file: str | None = None) -> None:
        if entered_file:
            open(entered_file, "w").close()
        while not os.path.exists(gate_file):
            time.sleep(0.02)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


ENV_ID = "OpenEnvTest/GatedStart-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=GatedStart)
