"""A remote vector env's seeds reproduce through worker restarts; np_random(_seed) as SyncVectorEnv's."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from tests.vector.vector_helpers import kill_worker


def _vector_after_restart(provider: str, mode: AutoresetMode) -> np.ndarray:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=2, autoreset_mode=mode)
    try:
        envs.reset(seed=0)
        kill_worker(envs.unwrapped.workers[0])
        obs, _, _, truncated, infos = envs.step(np.zeros(4, dtype=np.int64))
        assert truncated[:2].all() and infos["_worker_restarted"][:2].all()
        if mode is not AutoresetMode.SAME_STEP:
            obs = envs.step(np.zeros(4, dtype=np.int64))[0]  # the autoreset
        return obs
    finally:
        envs.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP], ids=lambda m: m.name)
def test_restarted_vector_envs_start_reproducible_episodes(provider: str, mode: AutoresetMode) -> None:
    np.testing.assert_array_equal(_vector_after_restart(provider, mode), _vector_after_restart(provider, mode))


def test_vector_np_random_seed_equals_sync_vector_env_s(provider: str) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=3, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=2)
    local = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync")
    try:
        envs.reset(seed=5)
        local.reset(seed=5)
        assert envs.np_random_seed == local.np_random_seed == (5, 6, 7)
        assert [int(g.integers(1 << 30)) for g in envs.np_random] == \
            [int(g.integers(1 << 30)) for g in local.np_random]
    finally:
        envs.close()
        local.close()


def test_get_attr_np_random_gives_each_env_s_generator_as_sync_vector_env() -> None:
    # A Generator cannot cross the wire: get_attr("np_random") raised a TypeError, where a
    # SyncVectorEnv gives each env's Generator; the ones given draw in the workers.
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=3, env_id="CartPole-v1", provider="process",
                        envs_per_worker=2)
    local = gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync")
    try:
        envs.reset(seed=5)
        local.reset(seed=5)
        ours, theirs = envs.get_attr("np_random"), local.get_attr("np_random")
        assert len(ours) == 3
        assert [int(g.integers(1 << 30)) for g in ours] == [int(g.integers(1 << 30)) for g in theirs]
        [second] = envs.get_attr("np_random", indices=[2])
        assert second.random() == local.get_attr("np_random")[2].random()
    finally:
        envs.close()
        local.close()
