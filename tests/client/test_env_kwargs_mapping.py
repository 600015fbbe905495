"""``gym.make`` takes the env's arguments as a mapping too (``env_kwargs=``), as ``make_vec``,
``RemoteVecEnv`` and ``EnvPool`` do: the same call works for one env and for many."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidRequestError


def test_env_kwargs_reach_the_served_env() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process", env_kwargs={"max_steps": 2})
    try:
        env.reset(seed=0)
        env.step({"message": "a"})
        assert env.step({"message": "b"})[3], "max_steps=2 did not reach the env"
    finally:
        env.close()


def test_a_name_given_both_ways_or_a_non_mapping_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="max_steps given both as keyword and in env_kwargs"):
        gym.make("OpenEnv/Echo-v0", provider="process", max_steps=3, env_kwargs={"max_steps": 2})
    with pytest.raises(InvalidRequestError, match="env_kwargs must be a dict"):
        gym.make("OpenEnv/Echo-v0", provider="process", env_kwargs=[("max_steps", 2)])


def test_a_render_mode_in_env_kwargs_is_the_envs_render_mode() -> None:
    # The client must know it too: render() returned None while the served env rendered.
    env = gym.make("OpenEnv/Echo-v0", provider="process", env_kwargs={"render_mode": "ansi"})
    envs = gym.make_vec("OpenEnv/Echo-v0", 2, provider="process", env_kwargs={"render_mode": "ansi"})
    try:
        env.reset(seed=0)
        envs.reset(seed=0)
        assert env.render_mode == "ansi" and isinstance(env.render(), str)
        assert envs.render_mode == "ansi" and all(isinstance(t, str) for t in envs.render())
    finally:
        env.close()
        envs.close()
    with pytest.raises(InvalidRequestError, match="render_mode given twice"):
        gym.make("OpenEnv/Echo-v0", provider="process", render_mode="rgb_array",
                 env_kwargs={"render_mode": "ansi"})
