"""Envs that stray from their own declarations, as many third-party envs do (Gymnasium's
checker only warns): observations outside their spaces, and a ``render_mode`` honoured
though ``metadata`` lists none. Registered on import (workers import them by
``env_id="tests.client.loose_env:OpenEnvTest/LooseObs-v0"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

LOOSE_OBS_ID = "OpenEnvTest/LooseObs-v0"
NO_RENDER_MODES_ID = "OpenEnvTest/NoRenderModes-v0"


class LooseObs(gym.Env):
    """``kind="int_box"``: floats for an int64 Box; ``"discrete"``: a 0-d array for a
    Discrete; ``"float64_box"``: float64 for a float32 Box (in range: only the dtype strays);
    ``"float64_dict"``: that inside a Dict. Three steps an episode."""

    def __init__(self, kind: str = "int_box") -> None:
        self.kind = kind
        self.observation_space = {"int_box": spaces.Box(0, 10, (2,), np.int64),
                                  "discrete": spaces.Discrete(5),
                                  "float64_box": spaces.Box(0, 10, (2,), np.float32),
                                  "float64_dict": spaces.Dict({"x": spaces.Box(0, 10, (2,), np.float32)}),
                                  }[kind]
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def _obs(self) -> np.ndarray | dict:
        if self.kind == "float64_box":
            return np.array([0.1, 2.2 + self.t])  # 0.1 is not a float32: a cast changes it
        if self.kind == "float64_dict":
            return {"x": np.array([0.1, 2.2 + self.t])}
        return np.array([1.7, 2.2]) if self.kind == "int_box" else np.array(self.t % 5)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 0.0, self.t >= 3, False, {}


class NoRenderModes(gym.Env):
    """``metadata`` without ``render_modes``; ``render_mode="rgb_array"`` still renders."""

    metadata: dict = {}

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.observation_space = spaces.Discrete(3)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return 1, 0.0, True, False, {}

    def render(self) -> np.ndarray:
        return np.full((2, 3, 3), 7, np.uint8)


gym.register(LOOSE_OBS_ID, entry_point=LooseObs)
gym.register(NO_RENDER_MODES_ID, entry_point=NoRenderModes)
