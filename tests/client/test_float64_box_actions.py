"""A Gym-v0 env gets a Box action in the dtype it was sent, as a local env does."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidActionError


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "MountainCarContinuous-v0"])
def test_float64_actions_are_not_rounded_to_the_space_dtype(env_id: str) -> None:
    # numpy's default float is float64 (rng.uniform, np.array([0.1])): a local env computes
    # with it as given; rounding it to the space's float32 changes rewards from step one.
    ours = gym.make("OpenEnv/Gym-v0", env_id=env_id, provider="process")
    local = gym.make(env_id)
    rng = np.random.default_rng(0)
    try:
        np.testing.assert_array_equal(ours.reset(seed=0)[0], local.reset(seed=0)[0])
        for _ in range(20):
            action = rng.uniform(-3.0, 3.0, size=(1,))  # float64, some beyond the bounds
            got, want = ours.step(action), local.step(action)
            np.testing.assert_array_equal(got[0], want[0])
            assert float(got[1]) == float(want[1])
            assert got[2:4] == want[2:4]
        with pytest.raises(InvalidActionError, match="not in the action space"):
            ours.step(np.array([np.nan]))  # float64 NaN still refused
    finally:
        ours.close()
        local.close()


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "MountainCarContinuous-v0"])
def test_a_list_action_reaches_the_env_as_the_list_it_is(env_id: str) -> None:
    # A local env computes with the list it is given (Python floats: Pendulum clips 1e40,
    # MountainCarContinuous adds them to its float32 state in float32). Cast to the space's
    # float32, 1e40 became inf and the step was refused; an np.float64 would change sums.
    ours = gym.make("OpenEnv/Gym-v0", env_id=env_id, provider="process")
    local = gym.make(env_id)
    try:
        np.testing.assert_array_equal(ours.reset(seed=0)[0], local.reset(seed=0)[0])
        for action in ([1e40], [0.1], (-1e40,), [1]):
            got, want = ours.step(action), local.step(action)
            np.testing.assert_array_equal(got[0], want[0])
            assert float(got[1]) == float(want[1])
            assert got[2:4] == want[2:4]
        # A list numpy cannot make an array of is refused with the typed error (it escaped as
        # numpy's ValueError from the worker), and the episode goes on.
        with pytest.raises(InvalidActionError, match="not in the action space"):
            ours.step([[1.0, 2.0], [3.0]])
        with pytest.raises(InvalidActionError, match="not in the action space"):
            ours.step([float("inf")])
        got, want = ours.step([0.5]), local.step([0.5])
        np.testing.assert_array_equal(got[0], want[0])
    finally:
        ours.close()
        local.close()


def test_a_scalar_box_action_reaches_the_env_as_sent() -> None:
    # A shape-() Box's action is a bare number: cast to the space's float32 it lost digits a
    # local env keeps (0.1 became 0.10000000149011612).
    from tests.vector.toy_envs import SCALAR_BOX_ID as ENV_ID, served

    ours = gym.make("OpenEnv/Gym-v0", env_id=served(ENV_ID), provider="process")
    local = gym.make(ENV_ID)
    try:
        ours.reset(seed=0)
        local.reset(seed=0)
        for action in (0.1, np.float64(-2.3), 7, np.array(0.3), 1e40):  # 1e40 was inf in float32
            got, want = ours.step(action), local.step(action)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1] == float(action)
        for bad in (float("nan"), float("inf")):
            with pytest.raises(InvalidActionError, match="not in the action space"):
                ours.step(bad)
        assert ours.step(0.25)[1] == 0.25
    finally:
        ours.close()
        local.close()
