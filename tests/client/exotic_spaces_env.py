"""An env whose spaces are Graph / Sequence / OneOf nested in Dict and Tuple, registered on
import (workers import it by ``env_id="tests.client.exotic_spaces_env:OpenEnvTest/Exotic-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

ENV_ID = "OpenEnvTest/Exotic-v0"


def exotic_space() -> spaces.Space:
    return spaces.Dict({
        "a": spaces.Tuple((
            spaces.Dict({"seq": spaces.Sequence(spaces.Box(0, 1, (2,), np.float32)),
                         "stacked": spaces.Sequence(spaces.Discrete(3, start=-1), stack=True),
                         "one": spaces.OneOf((spaces.Discrete(3), spaces.Box(-1, 1, (2,), np.float16)))}),
            spaces.Graph(spaces.Box(-1, 1, (3,), np.float32), spaces.Discrete(4)),
        )),
        "g": spaces.Graph(spaces.Discrete(5), None),
    })


class Exotic(gym.Env):
    def __init__(self) -> None:
        self.observation_space = exotic_space()
        self.action_space = exotic_space()
        self._obs_space = exotic_space()

    def _obs(self):
        self._obs_space.seed(int(self.np_random.integers(2**31)))
        return self._obs_space.sample()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError("action not in the action space")
        self.t += 1
        return self._obs(), 1.0, bool(self.np_random.random() < 0.3), False, {}


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=Exotic)
