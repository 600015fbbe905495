"""A reset() that raises for one env leaves every env's step count as SyncVectorEnv's."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.toy_envs import RESET_RAISE_ID as ENV_ID, served
from tests.vector.vector_helpers import assert_same

LIMIT = 4


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_reset_raising_for_one_env_restarts_the_time_limit_as_sync_vector_env(mode: AutoresetMode) -> None:
    remote = RemoteVectorEnv(2, "gym", env_id=served(ENV_ID),
                             provider="process", envs_per_worker=1, autoreset_mode=mode,
                             max_episode_steps=LIMIT)
    local = gym.vector.SyncVectorEnv([lambda: gym.make(ENV_ID, max_episode_steps=LIMIT)] * 2,
                                     autoreset_mode=mode)
    try:
        assert_same(remote.reset(seed=0), local.reset(seed=0), "reset")
        actions = np.zeros(2, dtype=np.int64)
        for t in range(LIMIT - 1):
            assert_same(remote.step(actions), local.step(actions), f"t={t}")
        for envs in (remote, local):
            # env 0 resets, env 1 raises: both envs' time limits start over (a TimeLimit
            # zeroes its count before the env's reset runs)
            with pytest.raises(ValueError, match="seed 13"):
                envs.reset(seed=[1, 13])
        # was: the vector env kept counting both envs' steps from before the reset, and
        # truncated their episodes after one step instead of LIMIT
        for t in range(LIMIT + 1):
            if mode is AutoresetMode.DISABLED and local._autoreset_envs.any():
                done = local._autoreset_envs.copy()
                assert_same(remote.reset(options={"reset_mask": done}),
                            local.reset(options={"reset_mask": done}), f"after t={t} reset")
            assert_same(remote.step(actions), local.step(actions), f"after t={t}")
    finally:
        remote.close()
        local.close()
