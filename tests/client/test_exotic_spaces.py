"""Gym-v0 serves Graph, Sequence and OneOf spaces (nested in Dict/Tuple) as the local env has
them: same spaces, same observations and dtypes, same batches as SyncVectorEnv."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import openenv_gym  # noqa: F401
from tests.client.exotic_spaces_env import ENV_ID

REMOTE_ID = f"tests.client.exotic_spaces_env:{ENV_ID}"


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if type(a) is not type(b) or a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype == object:
            return all(_same(x, y) for x, y in zip(a.ravel(), b.ravel()))
        return np.array_equal(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_single_env_matches_the_local_env() -> None:
    local = gym.make(ENV_ID, disable_env_checker=True)
    env = gym.make("OpenEnv/Gym-v0", env_id=REMOTE_ID, provider="process")
    try:
        assert env.observation_space == local.observation_space
        assert env.action_space == local.action_space
        assert _same(env.reset(seed=3)[0], local.reset(seed=3)[0])
        local.action_space.seed(0)
        for _ in range(5):
            action = local.action_space.sample()
            mine, theirs = env.step(action), local.step(action)
            assert _same(mine[0], theirs[0]) and mine[1:4] == theirs[1:4]
            if theirs[2]:
                assert _same(env.reset()[0], local.reset()[0])
    finally:
        env.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_env_batches_as_sync_vector_env(mode: AutoresetMode) -> None:
    ref = SyncVectorEnv([lambda: gym.make(ENV_ID, disable_env_checker=True)] * 3, autoreset_mode=mode)
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=3, env_id=REMOTE_ID, provider="process",
                        envs_per_worker=2, autoreset_mode=mode.value)
    try:
        assert envs.single_observation_space == ref.single_observation_space
        assert _same(envs.reset(seed=1)[0], ref.reset(seed=1)[0])
        ref.action_space.seed(0)
        for _ in range(8):
            actions = ref.action_space.sample()
            mine, theirs = envs.step(actions), ref.step(actions)
            for x, y in zip(mine, theirs):
                assert _same(x, y)
    finally:
        envs.close()
        ref.close()
