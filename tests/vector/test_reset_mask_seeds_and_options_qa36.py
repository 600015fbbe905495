"""A partial reset ignores the seeds of the envs ``reset_mask`` leaves out, whatever they are
(as ``SyncVectorEnv`` does; a str or float there refused the reset), and options that are not
a mapping are refused by name before anything is reset (``dict()`` took a list of pairs as
options a single env refuses, and failed on others with its own text)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError
from tests.vector.vector_helpers import assert_same, local_sync

N = 3


@pytest.fixture
def remote() -> gym.vector.VectorEnv:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=N, env_id="CartPole-v1", provider="process",
                        envs_per_worker=2, autoreset_mode="next_step", max_episode_steps=20)
    yield envs
    envs.close()


@pytest.mark.parametrize("ignored", ["x", 1.5], ids=repr)
def test_seed_of_an_env_the_mask_leaves_out_is_ignored_as_sync_vector_env_does(
        remote: gym.vector.VectorEnv, ignored: object) -> None:
    local = local_sync(N, AutoresetMode.NEXT_STEP, max_steps=20)
    try:
        assert_same(remote.reset(seed=0), local.reset(seed=0), "reset")
        mask = np.array([False, True, True])
        seeds = [ignored, 7, 8]
        assert_same(remote.reset(seed=seeds, options={"reset_mask": mask.copy()}),
                    local.reset(seed=seeds, options={"reset_mask": mask.copy()}), "partial reset")
        actions = np.array([1, 0, 1])
        assert_same(remote.step(actions), local.step(actions), "step")
        # The seed of an env being reset is still checked.
        with pytest.raises(InvalidRequestError, match=r"seed\[1\] must be an int or None, got 'y'"):
            remote.reset(seed=[0, "y", 1], options={"reset_mask": mask.copy()})
    finally:
        local.close()


@pytest.mark.parametrize("options", [[("low", -0.3), ("high", 0.3)], [1], "low"], ids=repr)
def test_options_that_are_not_a_mapping_are_refused_and_nothing_is_reset(
        remote: gym.vector.VectorEnv, options: object) -> None:
    obs, _ = remote.reset(seed=0)
    obs, *_ = remote.step(np.array([1, 1, 1]))
    with pytest.raises(InvalidRequestError, match=rf"options must be a mapping .* got "
                                                  rf"{type(options).__name__}; nothing was reset"):
        remote.reset(seed=5, options=options)  # type: ignore[arg-type]
    # Nothing was reset: the episodes carry on from where they were.
    again, *_ = remote.step(np.array([0, 0, 0]))
    local = local_sync(N, AutoresetMode.NEXT_STEP, max_steps=20)
    try:
        local.reset(seed=0)
        local.step(np.array([1, 1, 1]))
        np.testing.assert_array_equal(again, local.step(np.array([0, 0, 0]))[0])
    finally:
        local.close()
