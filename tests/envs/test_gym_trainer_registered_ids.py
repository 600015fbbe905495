"""Gym-v0 serves an id the trainer's registry has from a package it imported (``import ale_py``
registers ``ALE/Pong-v5``), though a worker is a fresh Python that never imported it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers OpenEnv/Gym-v0)
from openenv_gym._gym_ids import importable_env_id
from tests.envs.trainer_registered_env import ENV_ID


def test_an_id_of_an_imported_package_names_its_module() -> None:
    assert importable_env_id(ENV_ID) == f"tests.envs.trainer_registered_env:{ENV_ID}"


@pytest.mark.parametrize("env_id", [
    "CartPole-v1",                                   # Gymnasium's own: every worker has it
    "tests.envs.trainer_registered_env:" + ENV_ID,   # names its module already
    "Unknown/NoSuchEnv-v0",                          # the worker says it is unknown
])
def test_other_ids_are_left_as_given(env_id: str) -> None:
    assert importable_env_id(env_id) == env_id


def test_an_id_registered_from_main_is_left_as_given() -> None:
    # No worker can import the trainer's __main__: the worker's own hint says what to do.
    class Local(gym.Env):
        pass
    Local.__module__ = "__main__"
    gym.register("OpenEnvTest/FromMain-v0", entry_point=Local)
    try:
        assert importable_env_id("OpenEnvTest/FromMain-v0") == "OpenEnvTest/FromMain-v0"
    finally:
        del gym.registry["OpenEnvTest/FromMain-v0"]


def test_a_served_env_of_an_imported_package_is_made_in_the_worker() -> None:
    # Before, the worker refused it: "Namespace OpenEnvTest not found".
    with gym.make("OpenEnv/Gym-v0", env_id=ENV_ID, provider="process") as env:
        env.reset(seed=0)
        obs, reward, *_ = env.step(1)
    assert obs.tolist() == [1.0] and reward == 1.0


def test_ale_ids_registered_by_import_ale_py_are_served() -> None:
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    local = gym.make("ALE/Pong-v5")
    with gym.make_vec("OpenEnv/Gym-v0", num_envs=1, env_id="ALE/Pong-v5", provider="process") as envs:
        obs, _ = envs.reset(seed=3)
        local_obs, _ = local.reset(seed=3)
        np.testing.assert_array_equal(obs[0], local_obs)
    local.close()
