"""A Gym env whose start fails while a counter file says so, registered on import (workers
import it by ``env_id="tests.providers.flaky_start_env:OpenEnvTest/FlakyStart-v0"``), and
one whose reset fails likewise (``RESET_ENV_ID``).

``failures_file`` holds how many of the next starts fail; each failing start counts one down
(``reset_failures_file``: resets, likewise).
"""

from __future__ import annotations

import fcntl
import os

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def _take_one_failure(path: str) -> bool:
    """Count one failure down, if any are left (under a lock: workers start concurrently)."""
    if not os.path.exists(path):
        return False
    with open(path, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        left = int(f.read() or 0)
        if left <= 0:
            return False
        f.seek(0)
        f.truncate()
        f.write(str(left - 1))
        return True


class FlakyStart(gym.Env):
    """Observation 0, reward 1 per step; its constructor fails while ``failures_file`` counts."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, failures_file: str) -> None:
        if _take_one_failure(failures_file):
            raise RuntimeError("this start fails on purpose (failures_file counts it)")

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, False, False, {}


class FlakyReset(FlakyStart):
    """A :class:`FlakyStart` whose reset also fails while ``reset_failures_file`` counts."""

    def __init__(self, failures_file: str, reset_failures_file: str) -> None:
        super().__init__(failures_file)
        self._reset_failures_file = reset_failures_file

    def reset(self, *, seed=None, options=None):
        if _take_one_failure(self._reset_failures_file):
            raise RuntimeError("this reset fails on purpose (reset_failures_file counts it)")
        return super().reset(seed=seed, options=options)


ENV_ID = "OpenEnvTest/FlakyStart-v0"
RESET_ENV_ID = "OpenEnvTest/FlakyReset-v0"
#: ``ENV_ID`` as Gym-v0's ``env_id`` (the worker imports this module first).
GYM_ID = f"tests.providers.flaky_start_env:{ENV_ID}"


def single_env(failures_file: str | os.PathLike, **kwargs) -> gym.Env:
    """``gym.make`` of a :class:`FlakyStart` on a process worker, its ``failures_file`` set to
    0 (every start succeeds until a test writes a count); ``kwargs`` go to ``gym.make``."""
    with open(failures_file, "w") as f:
        f.write("0")
    return gym.make("OpenEnv/Gym-v0", env_id=GYM_ID, failures_file=str(failures_file),
                    provider="process", **kwargs)


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=FlakyStart)
if RESET_ENV_ID not in gym.registry:
    gym.register(RESET_ENV_ID, entry_point=FlakyReset)
