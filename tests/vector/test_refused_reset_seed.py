"""Same seeds and actions, same trajectories as SyncVectorEnv, however the envs are laid out
on workers: here, after a reset refused for a negative seed (the workers of the other envs
reset them, so the next steps depended on the refused call)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError
from tests.vector.vector_helpers import MAX_STEPS, assert_same, local_sync, step_both

N = 4


@pytest.mark.parametrize("envs_per_worker", [1, 2, 4])
def test_a_negative_seed_resets_no_env_and_trajectories_go_on_as_sync_vector_env_s(
        provider: str, envs_per_worker: int) -> None:
    remote = gym.make_vec("OpenEnv/Gym-v0", num_envs=N, env_id="CartPole-v1", provider=provider,
                          envs_per_worker=envs_per_worker, max_episode_steps=MAX_STEPS)
    local = local_sync(N, AutoresetMode.NEXT_STEP)
    try:
        assert_same(remote.reset(seed=0), local.reset(seed=0), "reset")
        rng = np.random.default_rng(0)
        for t in range(5):
            step_both(remote, local, rng.integers(0, 2, N), f"before t={t}")
        # Refused, the reset leaves every env as it was: the reference never sees it
        # (SyncVectorEnv's own refusal of seed -1 zeroes env 0's TimeLimit count, a quirk).
        with pytest.raises(InvalidRequestError, match="env 0.* got -1"):
            remote.reset(seed=-1)
        with pytest.raises(InvalidRequestError, match="env 3.* got -2"):
            remote.reset(seed=[None, 5, None, -2])
        assert remote.np_random_seed == (0, 1, 2, 3)
        for t in range(20):
            step_both(remote, local, rng.integers(0, 2, N), f"after t={t}")
        # The seed of an env the mask leaves out is not used, as SyncVectorEnv ignores it.
        mask = np.array([False, True, False, False])
        assert_same(remote.reset(seed=[-1, 7, 0, 0], options={"reset_mask": mask.copy()}),
                    local.reset(seed=[-1, 7, 0, 0], options={"reset_mask": mask.copy()}), "masked")
        step_both(remote, local, rng.integers(0, 2, N), "after the masked reset")
    finally:
        remote.close()
        local.close()
