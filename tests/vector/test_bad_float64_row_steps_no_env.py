"""Gym-v0 keeps Box actions in the dtype they are sent in (float64 rows travel inline, not in
the float32 column): such a batch with one non-finite row was not checked as a whole, so the
worker refused that env while the others stepped and their rewards were lost (README: "no env
steps")."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidActionError


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_row_in_any_dtype_steps_no_env(dtype: type) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="Pendulum-v1", provider="process",
                        envs_per_worker=1)
    try:
        envs.reset(seed=0)
        before = envs.call("state")
        with pytest.raises(InvalidActionError, match=r"env 1: .*no env stepped"):
            envs.step(np.array([[0.5], [np.nan]], dtype=dtype))
        for b, a in zip(before, envs.call("state")):
            np.testing.assert_array_equal(a, b)
        # Out of bounds but finite is the served env's business (actions_as_sent), in float64 too.
        envs.step(np.array([[0.5], [1e300]], dtype=np.float64))
    finally:
        envs.close()
