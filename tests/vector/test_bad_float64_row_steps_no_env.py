"""Gym-v0 keeps Box actions in the dtype they are sent in (float64 rows travel inline, not in
the float32 column): such a batch with one non-finite row was not checked as a whole, so the
worker refused that env while the others stepped and their rewards were lost (README: "no env
steps")."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from tests.vector.vector_helpers import refused_and_no_env_stepped


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_row_in_any_dtype_steps_no_env(dtype: type) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="Pendulum-v1", provider="process",
                        envs_per_worker=1)
    try:
        envs.reset(seed=0)
        refused_and_no_env_stepped(envs, np.array([[0.5], [np.nan]], dtype=dtype),
                                   r"env 1: .*no env stepped")
        # Out of bounds but finite is the served env's business (actions_as_sent), in float64 too.
        envs.step(np.array([[0.5], [1e300]], dtype=np.float64))
    finally:
        envs.close()
