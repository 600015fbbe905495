"""A single env's action larger than the wire's frame limit is refused in the client with an
:class:`InvalidActionError` naming the size and the limit, as an action over the env's own cap
is, before anything is sent; the session steps on."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidActionError


def test_action_over_the_frame_limit_is_an_invalid_action() -> None:
    with gym.make("OpenEnv/Echo-v0", provider="process") as env:
        env.reset(seed=0)
        with pytest.raises(InvalidActionError, match=r"at most 65536 characters"):
            env.step({"message": "x" * (8 << 20)})  # over Echo's cap: the worker refuses it
        with pytest.raises(InvalidActionError,
                           match=r"action is too large: the step request is 70\.0 MiB \(734003\d\d "
                                 r"bytes\) as sent, over the wire's frame limit of 64 MiB "
                                 r"\(67108864 bytes\); nothing was sent and the env did not step"):
            env.step({"message": "x" * (70 << 20)})
        obs, reward, *_ = env.step({"message": "hi"})
        assert obs["echo"] == "hi" and reward == pytest.approx(0.2)
        assert env.unwrapped.call("state")["step_count"] == 1
