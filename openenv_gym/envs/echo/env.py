"""The Echo environment: the smallest complete env, used to debug and benchmark the wire.

Example:
    >>> env = EchoEnv(max_steps=2)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.parse_action({"message": "hi"}))
    >>> obs.echo, obs.length, round(reward, 2), truncated
    ('hi', 2, 0.2, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pydantic import Field

from openenv_gym._numbers import is_int
from openenv_gym.envs.base import Environment
from openenv_gym.models import Action, Observation, State

__all__ = ["EchoAction", "EchoObservation", "EchoEnv"]

MAX_MESSAGE = 65536


class EchoAction(Action):
    """A message to echo."""

    message: str = Field(max_length=MAX_MESSAGE, description="Text to echo back.")


class EchoObservation(Observation):
    """The echoed message and its length."""

    echo: str = Field(max_length=MAX_MESSAGE)
    length: int = Field(ge=0, le=MAX_MESSAGE)


class EchoEnv(Environment):
    """Echoes each message; reward is 0.1 × its length; truncates after ``max_steps``.

    Args:
        max_steps: Steps per episode before ``truncated`` (default 100).
        frame_shape: When set (e.g. ``(210, 160, 3)``), observations also carry a ``frame``:
            a constant uint8 image of that shape, to measure how images cross the wire.
        render_mode: ``"ansi"`` renders the last echo as text.
    """

    action_model = EchoAction
    observation_model = EchoObservation
    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, max_steps: int = 100, frame_shape: tuple[int, ...] | None = None,
                 render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        if not is_int(max_steps, 1):
            raise ValueError(f"max_steps must be >= 1 (a whole number), got {max_steps!r}")
        self.max_steps = self.episode_limit = max_steps
        self._frame = None
        if frame_shape is not None:
            dims = list(frame_shape) if isinstance(frame_shape, (tuple, list, np.ndarray)) else None
            if not dims or not all(is_int(n, 1) for n in dims):
                raise ValueError(f"frame_shape must be a tuple of whole numbers >= 1, e.g. "
                                 f"(210, 160, 3), or None, got {frame_shape!r}")
            shape = tuple(int(n) for n in dims)
            self._frame = (np.arange(int(np.prod(shape))) % 256).astype(np.uint8).reshape(shape)
            self.observation_space = spaces.Dict(
                {**self.observation_space.spaces, "frame": spaces.Box(0, 255, shape, np.uint8)})
        self._steps = 0
        self._last = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._steps = 0
        self._last = ""
        return EchoObservation(echo="", length=0), {}

    def step(self, action: EchoAction):
        self._steps += 1
        self._last = action.message
        obs = EchoObservation(echo=action.message, length=len(action.message))
        return obs, 0.1 * len(action.message), False, self._steps >= self.max_steps, {}

    def observation_to_wire(self, obs: EchoObservation) -> Any:
        wire = obs.model_dump()
        if self._frame is not None:
            wire["frame"] = self._frame
        return wire

    def render(self) -> str:
        return self._last

    def state(self) -> State:
        return State(last_message=self._last, max_steps=self.max_steps)
