"""A Gym-v0 env's ``spec.reward_threshold`` is the served env's, as a local env's spec has it.

It was None: code that stops training once an env is solved (``mean_return >=
env.spec.reward_threshold``) found no threshold for a remote CartPole-v1, whose local
spec says 475.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "FrozenLake-v1", "Pendulum-v1"])
def test_spec_reward_threshold_is_the_served_envs(env_id: str) -> None:
    env = gym.make("OpenEnv/Gym-v0", env_id=env_id, provider="process")
    try:
        assert env.spec.reward_threshold == gym.spec(env_id).reward_threshold  # Pendulum: None
        assert gym.make(env.spec).spec.reward_threshold == env.spec.reward_threshold
    finally:
        env.close()


def test_a_served_env_without_a_threshold_sends_none() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process")
    try:
        assert "reward_threshold" not in env.unwrapped.remote_spec
        assert env.spec.reward_threshold is None
    finally:
        env.close()


def test_a_sub_envs_spec_has_the_served_envs_threshold_as_sync_vector_envs_do() -> None:
    local = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync")
    envs = gym.make_vec("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process")
    try:
        want = local.get_attr("spec")[0].reward_threshold
        assert want == 475.0
        assert [s.reward_threshold for s in envs.get_attr("spec")] == [want, want]
    finally:
        envs.close()
        local.close()
