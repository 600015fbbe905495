"""A bool seed is the int it is, as in Gymnasium: ``reset(seed=True)`` seeds as ``seed=1``
(bool is an int subclass; Gymnasium's own envs take it) instead of being refused by the worker."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the ids)


def test_reset_takes_a_bool_seed_as_gymnasium_does() -> None:
    local = gym.make("CartPole-v1")
    remote = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    echo = gym.make("OpenEnv/Echo-v0", provider="process")
    try:
        for seed in (True, False):
            want, _ = local.reset(seed=seed)
            got, _ = remote.reset(seed=seed)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, remote.reset(seed=int(seed))[0])
            obs, _ = echo.reset(seed=seed)
            assert obs["echo"] == ""
    finally:
        local.close()
        remote.close()
        echo.close()
