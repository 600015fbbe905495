"""Envs that hand over numpy scalars, tuples and arrays, registered on import (workers import
it by ``env_id="tests.client.typed_info_env:OpenEnvTest/TypedInfo-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def _info(t: int) -> dict:
    return {"x": np.float32(0.5 + t), "x64": np.float64(0.25), "k": np.int32(t), "u": np.uint8(200),
            "flag": np.bool_(t % 2 == 0), "pos": (t, 2), "nested": {"v": np.float32(1.0), "t": (np.int64(1),)},
            "mask": np.array([1, 0, 1], np.int8), "a0": np.array(3.0, np.float32), "plain": 1.5, "n": 2}


class TypedInfo(gym.Env):
    observation_space = spaces.Dict({"d": spaces.Discrete(4), "mb": spaces.MultiBinary(3),
                                     "md": spaces.MultiDiscrete([3, 3]), "b": spaces.Box(0, 1, (2,), np.float32)})
    action_space = spaces.Discrete(2)

    def _obs(self) -> dict:
        return {"d": np.int64(1), "mb": np.array([1, 0, 1], np.int8), "md": np.array([1, 2], np.int64),
                "b": np.array([0.5, 0.5], np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), _info(0)

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, self.t >= 3, False, _info(self.t)


class TypedInfoFlat(TypedInfo):
    """The same infos with a flat observation (for SB3, which takes no nested Dict)."""

    observation_space = spaces.Box(0, 1, (2,), np.float32)

    def _obs(self) -> np.ndarray:
        return np.array([0.5, 0.5], np.float32)


ENV_ID = "OpenEnvTest/TypedInfo-v0"
FLAT_ID = "OpenEnvTest/TypedInfoFlat-v0"
for _id, _entry in ((ENV_ID, TypedInfo), (FLAT_ID, TypedInfoFlat)):
    if _id not in gym.registry:
        gym.register(_id, entry_point=_entry)
