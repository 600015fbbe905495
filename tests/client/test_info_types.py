"""A remote Gym-v0 env hands over the types the local env does: numpy scalars stay numpy
scalars, tuples tuples, and arrays are the caller's to write into (not read-only views)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from tests.client.typed_info_env import ENV_ID, FLAT_ID

REMOTE_ID = f"tests.client.typed_info_env:{ENV_ID}"


def _shape(value: Any) -> Any:
    """Types all the way down (and array dtypes, shapes and writability)."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value), [_shape(item) for item in value]
    if isinstance(value, np.ndarray):
        return np.ndarray, value.dtype.str, value.shape, value.flags.writeable
    return type(value)


def test_single_env_obs_and_infos_have_the_local_types() -> None:
    local = gym.make(ENV_ID)
    remote = gym.make("OpenEnv/Gym-v0", env_id=REMOTE_ID, provider="process")
    try:
        assert _shape(remote.reset(seed=0)) == _shape(local.reset(seed=0))
        for _ in range(3):
            mine, ref = remote.step(0), local.step(0)
            assert _shape(mine[0]) == _shape(ref[0])
            assert _shape(mine[4]) == _shape(ref[4])
        info = mine[4]
        assert type(info["x"]) is np.float32 and type(info["flag"]) is np.bool_ and info["pos"] == (3, 2)
        info["mask"][0] = 0  # writable, as locally
        mine[0]["mb"][0] = 0
    finally:
        remote.close()
        local.close()


def test_make_vec_batches_infos_as_sync_vector_env() -> None:
    ref = gym.make_vec(ENV_ID, 2, vectorization_mode="sync")
    envs = gym.make_vec("OpenEnv/Gym-v0", 2, env_id=REMOTE_ID, provider="process", envs_per_worker=2)
    try:
        assert _shape(envs.reset(seed=0)[1]) == _shape(ref.reset(seed=0)[1])
        for _ in range(3):
            mine, ref_out = envs.step(np.zeros(2, np.int64)), ref.step(np.zeros(2, np.int64))
            assert _shape(mine[4]) == _shape(ref_out[4])
        assert mine[4]["x"].dtype == np.float32 and mine[4]["k"].dtype == np.int32
    finally:
        envs.close()
        ref.close()


def test_sb3_infos_match_dummy_vec_env_s() -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    from openenv_gym.sb3 import RemoteVecEnv

    ref = DummyVecEnv([lambda: gym.make(FLAT_ID)] * 2)
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id=f"tests.client.typed_info_env:{FLAT_ID}",
                        provider="process", envs_per_worker=2)
    try:
        for v in (venv, ref):
            v.seed(0)
            v.reset()
        assert _shape(venv.reset_infos) == _shape(ref.reset_infos)
        for _ in range(3):  # the third step ends the episodes: terminal_observation too
            mine, ref_out = venv.step(np.zeros(2, np.int64)), ref.step(np.zeros(2, np.int64))
            assert _shape(mine[3]) == _shape(ref_out[3])
    finally:
        venv.close()
        ref.close()
