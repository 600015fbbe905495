"""A vector reset's seed of the wrong type names the seed (it said "length=1" for a str, and
took 1.7 as 1 and "3" as 3)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidRequestError


def test_seed_of_the_wrong_type_is_named_and_the_env_stays_usable() -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="process")
    try:
        obs, _ = envs.reset(seed=0)
        with pytest.raises(InvalidRequestError, match=r"seed must be an int .* got 'x'"):
            envs.reset(seed="x")
        with pytest.raises(InvalidRequestError, match=r"seed must be an int .* got 1.5"):
            envs.reset(seed=1.5)
        with pytest.raises(InvalidRequestError, match=r"seed\[1\] must be an int or None, got 1.7"):
            envs.reset(seed=[0, 1.7])
        with pytest.raises(InvalidRequestError, match=r"seed\[0\] must be an int or None, got '3'"):
            envs.reset(seed=["3", None])
        again, _ = envs.reset(seed=[0, np.int64(1)])
        np.testing.assert_array_equal(again, obs)
        # A bool is the int it is, as Gymnasium's vector envs (and a single env) take it.
        np.testing.assert_array_equal(envs.reset(seed=False)[0], obs)
        np.testing.assert_array_equal(envs.reset(seed=np.array(0))[0], obs)
        with pytest.raises(InvalidRequestError, match=r"seed must be an int .* got 0.5"):
            envs.reset(seed=np.array(0.5))
        np.testing.assert_array_equal(envs.reset(seed=[True, None])[0][0], envs.reset(seed=1)[0][0])
    finally:
        envs.close()


def test_a_seed_list_of_the_wrong_length_is_one_of_ours_and_nothing_is_reset() -> None:
    # A bare ValueError (Gymnasium's words): `except OpenEnvError` missed it.
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="process")
    try:
        envs.reset(seed=0)
        first = envs.step(np.zeros(2, dtype=np.int64))[0]
        envs.reset(seed=0)
        with pytest.raises(InvalidRequestError, match=r"length must match num_envs=2 but got length=3: give one seed"):
            envs.reset(seed=[0, 1, 2])
        # Nothing was reset: the episodes go on as if the call had not been made.
        np.testing.assert_array_equal(envs.step(np.zeros(2, dtype=np.int64))[0], first)
    finally:
        envs.close()
