"""A tuple among env kwargs reaches the worker as a tuple, as a local env gets it: JSON made it
a list, and ALE refused ``frameskip=(2, 5)`` ("Invalid frameskip type: <class 'list'>"), where
``gym.make("ALE/Pong-v5", frameskip=(2, 5))`` works."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers.base import env_kwargs_json


def test_tuples_travel_as_tuples_and_lists_as_lists() -> None:
    from openenv_gym.protocol.startup import env_kwargs_from_json  # what the worker reads them with

    kwargs = {"a": (1, 2), "b": [1, (2, [3, (4,)])], "c": {"d": ()}, "e": [], "f": "x"}
    assert env_kwargs_from_json(env_kwargs_json(kwargs)) == kwargs
    back = env_kwargs_from_json(env_kwargs_json(kwargs))
    assert type(back["a"]) is tuple and type(back["b"]) is list and type(back["b"][1]) is tuple
    assert type(back["c"]["d"]) is tuple and type(back["e"]) is list


def test_a_gym_v0_env_gets_a_tuple_argument_as_locally() -> None:
    pytest.importorskip("ale_py")
    env = gym.make("OpenEnv/Gym-v0", env_id="ale_py:ALE/Pong-v5", frameskip=(2, 5), provider="process")
    try:
        env.reset(seed=0)
        env.step(0)
    finally:
        env.close()
