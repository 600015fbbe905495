"""A vector step refused for one env's action steps no env at all (no lost rewards or episode ends)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidActionError


@pytest.mark.parametrize("envs_per_worker", [1, 2])
@pytest.mark.parametrize("actions", [np.array([0, 1, 5, 0]), np.array([-1, 1, 0, 0])])
def test_out_of_space_action_steps_no_env(envs_per_worker: int, actions: np.ndarray) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider="process",
                        envs_per_worker=envs_per_worker)
    local = gym.make_vec("CartPole-v1", num_envs=4, vectorization_mode="sync")
    try:
        envs.reset(seed=0)
        local.reset(seed=0)
        with pytest.raises(InvalidActionError, match=r"env \d: action -?\d is not in the action space"):
            envs.step(actions)
        # Every env is where it was: the next step equals a local vector env's first step.
        good = np.array([0, 1, 0, 1])
        obs, rewards, terminated, truncated, _ = envs.step(good)
        want_obs, want_rewards, *_ = local.step(good)
        np.testing.assert_array_equal(obs, want_obs)
        np.testing.assert_array_equal(rewards, want_rewards)
    finally:
        envs.close()
        local.close()


def test_wrong_shape_discrete_batch_is_a_typed_error_naming_the_shape() -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider="process",
                        envs_per_worker=2)
    try:
        envs.reset(seed=0)
        with pytest.raises(InvalidActionError, match=r"must have shape \(4,\), got \(4, 2\)"):
            envs.step(np.zeros((4, 2), dtype=np.int64))
        assert envs.step(np.zeros(4, dtype=np.int64))[0].shape == (4, 4)
    finally:
        envs.close()


def test_box_action_outside_bounds_steps_no_env() -> None:
    # FinRL refuses an action outside its Box (unlike Gym-v0, whose served env decides).
    envs = gym.make_vec("OpenEnv/FinRL-v0", num_envs=2, provider="process", envs_per_worker=1,
                        tickers=["AAPL", "JPM"])
    try:
        envs.reset(seed=0)
        state = envs.call("state")
        with pytest.raises(InvalidActionError, match="env 1: .*no env stepped"):
            envs.step(np.array([[0.5, 0.5], [5.0, 0.0]], dtype=np.float32))
        assert envs.call("state") == state
    finally:
        envs.close()


def test_an_integer_beyond_the_action_dtype_is_refused_not_wrapped() -> None:
    # 2**32 written into an int32 column became 0, an action in the space: the env stepped
    # with an action no one sent. Gymnasium's contains() refuses it.
    from tests.vector.toy_envs import INT32_ACT_ID as ENV_ID, served

    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=served(ENV_ID),
                        provider="process", envs_per_worker=1)
    try:
        envs.reset(seed=0)
        assert not gym.make(ENV_ID).action_space.contains(np.array([2**32, 0]))
        with pytest.raises(InvalidActionError, match=r"env 1: action \[4294967296, 0\] .*no env stepped"):
            envs.step(np.array([[0, 1], [2**32, 0]]))
        assert envs.step(np.array([[0, 1], [2, 2]], dtype=np.int64))[1].tolist() == [1.0, 4.0]
    finally:
        envs.close()
