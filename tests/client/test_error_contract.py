"""README (Troubleshooting): every error the package raises is an ``openenv_gym.OpenEnvError``,
and a step before a reset is a ``ResetNeededError`` (also Gymnasium's ``ResetNeeded``), on a
single env as on a vector env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym import OpenEnvError, RemoteEnv, ResetNeededError
from openenv_gym.providers import get_provider


def test_a_remote_env_stepped_before_reset_raises_reset_needed_error() -> None:
    env = RemoteEnv("echo", provider="process")
    try:
        with pytest.raises(ResetNeededError, match="reset") as raised:
            env.step({"message": "x"})
        assert isinstance(raised.value, gym.error.ResetNeeded)  # still Gymnasium's type
        with pytest.raises(ResetNeededError):
            env.call("render")
        with pytest.raises(ResetNeededError):
            env.set_wrapper_attr("tag", 1, force=True)
    finally:
        env.close()


def test_a_vector_env_stepped_before_reset_raises_reset_needed_error() -> None:
    envs = gym.make_vec("OpenEnv/Echo-v0", 2, provider="process")
    try:
        with pytest.raises(ResetNeededError) as raised:
            envs.step({"message": np.array(["a", "b"])})
        assert isinstance(raised.value, gym.error.ResetNeeded)
    finally:
        envs.close()


def test_an_unknown_provider_name_is_an_open_env_error_and_a_value_error() -> None:
    with pytest.raises(OpenEnvError, match="unknown provider 'dockr'") as raised:
        get_provider("dockr")
    assert isinstance(raised.value, ValueError)
    with pytest.raises(openenv_gym.InvalidRequestError):
        RemoteEnv("echo", provider="dockr")
