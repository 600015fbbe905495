"""MultiBinary actions given as floats 0./1. (what SB3's Bernoulli policies send) step a vector
env as they step SyncVectorEnv: ``MultiBinary.contains`` takes them, so the local env does."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidActionError
from tests.vector.toy_envs import MULTIBINARY_ID as ENV_ID, served

REMOTE_ID = served(ENV_ID)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_multibinary_actions_in_any_dtype_match_sync_vector_env(dtype) -> None:
    ours = gym.make_vec("OpenEnv/Gym-v0", 3, env_id=REMOTE_ID, provider="process", envs_per_worker=2)
    local = gym.make_vec(ENV_ID, 3, vectorization_mode="sync")
    rng = np.random.default_rng(0)
    try:
        ours.reset(seed=1)
        local.reset(seed=1)
        for _ in range(12):
            actions = rng.integers(0, 2, (3, 3)).astype(dtype)
            for got, want in zip(ours.step(actions)[:4], local.step(actions)[:4]):
                np.testing.assert_array_equal(got, want)
    finally:
        ours.close()
        local.close()


def test_multibinary_actions_other_than_0_and_1_are_still_refused() -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", 2, env_id=REMOTE_ID, provider="process")
    try:
        envs.reset(seed=0)
        for bad in (np.full((2, 3), 0.5), np.full((2, 3), np.nan), np.full((2, 3), 2.0)):
            with pytest.raises(InvalidActionError):
                envs.step(bad)
        envs.step(np.ones((2, 3), np.float32))  # still usable
    finally:
        envs.close()
