"""``copy`` and ``shared_memory`` that are not bools are refused naming them, before any worker
starts: ``copy="False"`` (true to Python) copied anyway, and ``copy=None`` handed out views of
the observation buffer that the next step overwrites."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError


@pytest.mark.parametrize("name, value, message", [
    ("copy", "False", "copy must be True or False, got 'False'"),
    ("copy", None, "copy must be True or False, got None"),
    ("copy", 0, "copy must be True or False, got 0"),
    ("shared_memory", "yes", "shared_memory must be True, False or None"),
])
def test_a_switch_that_is_not_a_bool_is_refused_by_name(name: str, value: object, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        gym.make_vec("OpenEnv/Echo-v0", 2, provider="process", **{name: value})


def test_numpy_bools_are_bools() -> None:
    envs = gym.make_vec("OpenEnv/Echo-v0", 2, provider="process", copy=np.bool_(False),
                        shared_memory=np.bool_(True))
    try:
        envs.reset(seed=0)
        assert envs.step({"message": ("a", "bc")})[0]["length"].tolist() == [1, 2]
    finally:
        envs.close()
