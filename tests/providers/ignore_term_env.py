"""A Gym env whose worker ignores SIGTERM once the env is made: a stand-in for a deadlocked
env, which a stop must end by SIGKILL after its grace. Workers import it by
``env_id="tests.providers.ignore_term_env:OpenEnvTest/IgnoreTerm-v0"``; the constructor, not
the import, changes the handler, so a trainer that imports it keeps its own.

``noted``: a file to which each SIGTERM appends the worker's pid (a test learns that a stop
has begun), and action 1 hangs the step (an env stuck in a call).
"""

from __future__ import annotations

import os
import signal
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class IgnoreTerm(gym.Env):
    """Observation 0, reward 0; its process ignores SIGTERM from its construction on."""

    observation_space = spaces.Box(0, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, noted: str = "") -> None:
        def note(signum, frame) -> None:
            with open(noted, "a") as f:
                f.write(f"{os.getpid()}\n")

        # Replaces the server's own handler (which would shut the worker down).
        signal.signal(signal.SIGTERM, note if noted else signal.SIG_IGN)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        if action == 1:
            time.sleep(3600)  # stuck: only a SIGKILL ends it
        return np.zeros(1, np.float32), 0.0, False, False, {}


ENV_ID = "OpenEnvTest/IgnoreTerm-v0"
if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=IgnoreTerm)
