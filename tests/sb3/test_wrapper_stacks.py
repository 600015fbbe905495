"""SB3's VecEnv wrappers stacked on RemoteVecEnv answer as the same stack on DummyVecEnv."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.vec_env import (  # noqa: E402
    DummyVecEnv,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
)

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from tests.sb3.helpers import assert_same_step  # noqa: E402


def _stack(venv):
    """The stack people put on a VecEnv for PPO: episode stats, normalization, frame stack."""
    return VecFrameStack(VecNormalize(VecMonitor(venv)), 2)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_get_attr_of_the_spaces_through_wrappers_equals_dummy_vec_env(env_id: str) -> None:
    remote = _stack(RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id=env_id, provider="process"))
    local = _stack(DummyVecEnv([lambda: gym.make(env_id)] * 2))
    try:
        for name in ("observation_space", "action_space"):
            assert remote.get_attr(name) == local.get_attr(name), name
            assert remote.get_attr(name, indices=[1]) == local.get_attr(name, indices=[1]), name
            assert remote.has_attr(name)
    finally:
        remote.close()
        local.close()


def test_steps_through_wrappers_equal_dummy_vec_env() -> None:
    remote = _stack(RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process"))
    local = _stack(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    try:
        remote.seed(3)
        local.seed(3)
        np.testing.assert_array_equal(remote.reset(), local.reset())
        rng = np.random.default_rng(0)
        for t in range(60):
            actions = rng.integers(0, 2, 2)
            assert_same_step(remote.step(actions), local.step(actions), t)
    finally:
        remote.close()
        local.close()
