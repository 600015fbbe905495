"""Gym-v0 hands ``gym.make``'s own arguments through, and refuses an id that is itself a
served env (``OpenEnv/*``), which would otherwise start workers from inside its worker."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers.common import PassiveEnvChecker

import openenv_gym
from openenv_gym.envs.gym.env import GymEnv


def _wrappers(env: gym.Env) -> list[type]:
    found = []
    while isinstance(env, gym.Wrapper):
        found.append(type(env))
        env = env.env
    return found


def test_disable_env_checker_is_the_callers_to_choose() -> None:
    checked, unchecked = GymEnv("CartPole-v1", disable_env_checker=False), GymEnv("CartPole-v1")
    try:
        assert PassiveEnvChecker in _wrappers(checked.inner)
        assert PassiveEnvChecker not in _wrappers(unchecked.inner)  # the default stays off
    finally:
        checked.close()
        unchecked.close()


def test_disable_env_checker_reaches_a_worker() -> None:
    env = openenv_gym.RemoteEnv("gym", env_id="CartPole-v1", provider="process",
                                disable_env_checker=False)
    try:
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["OpenEnv/Echo-v0", "openenv_gym:OpenEnv/Echo-v0", "OpenEnv/Echo"])
def test_a_served_env_id_is_refused_naming_the_id_to_make(env_id: str) -> None:
    with pytest.raises(openenv_gym.InvalidRequestError, match=r"gym\.make\('OpenEnv/Echo-v0'"):
        GymEnv(env_id=env_id, provider="process")


def test_a_served_env_id_is_refused_by_the_worker_as_a_typed_error() -> None:
    with pytest.raises(openenv_gym.InvalidRequestError, match="not through OpenEnv/Gym-v0"):
        gym.make("OpenEnv/Gym-v0", env_id="OpenEnv/Gym-v0", provider="process")


def test_id_among_the_served_envs_arguments_is_refused_naming_env_id() -> None:
    # gym.make(env_id, id=...) would answer "make() got multiple values for argument 'id'",
    # which does not say that Gym-v0 names the env it serves with env_id.
    with pytest.raises(openenv_gym.InvalidRequestError, match=r"pass env_id='CartPole-v1'"):
        GymEnv(id="CartPole-v1")
    with pytest.raises(openenv_gym.InvalidRequestError, match=r"pass env_id='Pendulum-v1'"):
        openenv_gym.RemoteEnv("gym", provider="process", env_id="CartPole-v1", id="Pendulum-v1")


def test_a_render_mode_the_served_env_s_metadata_leaves_out_renders_as_locally() -> None:
    # Locally gym.make only warns for a render_mode its env's metadata does not list (many
    # third-party envs declare no render_modes and render all the same); the worker refused it.
    from tests.client.loose_env import NO_RENDER_MODES_ID

    local = gym.make(NO_RENDER_MODES_ID, render_mode="rgb_array")
    local.reset()
    want = local.render()
    remote_id = f"tests.client.loose_env:{NO_RENDER_MODES_ID}"
    env = gym.make("OpenEnv/Gym-v0", env_id=remote_id, render_mode="rgb_array", provider="process")
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=remote_id, render_mode="rgb_array",
                        provider="process")
    try:
        env.reset()
        np.testing.assert_array_equal(env.render(), want)
        # The client keeps the served env's metadata as it is (no render_modes), so Gymnasium's
        # checks on this side only warn, as on the local env.
        assert "render_modes" not in env.unwrapped.metadata
        envs.reset()
        for frame in envs.render():
            np.testing.assert_array_equal(frame, want)
    finally:
        env.close()
        envs.close()
        local.close()
