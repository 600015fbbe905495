"""Each served env gets its action as Gymnasium's vector envs hand it over: a numpy scalar of the
space's dtype for ``Discrete`` (not a Python ``int``), an array row for the others."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from tests.vector.toy_envs import ACTION_TYPE_ID as ENV_ID, SPACES, served


@pytest.mark.parametrize("space", sorted(SPACES))
def test_sub_env_gets_the_action_type_sync_vector_env_gives(space: str) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=3, env_id=served(ENV_ID),
                        provider="process", envs_per_worker=2, space=space)
    local = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID, space=space)] * 3)
    try:
        envs.reset(seed=0)
        local.reset(seed=0)
        envs.action_space.seed(1)
        actions = envs.action_space.sample()
        _, rewards, _, _, infos = envs.step(actions)
        _, want_rewards, _, _, want_infos = local.step(actions)
        assert list(infos["type"]) == list(want_infos["type"])
        np.testing.assert_allclose(rewards, want_rewards)
    finally:
        envs.close()
        local.close()
