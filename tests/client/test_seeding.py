"""A single remote env's seeds reproduce: np_random is the served env's, and seeds survive restarts."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.vector.vector_helpers import kill_worker


def _sticky_run(env: gym.Env) -> list[np.ndarray]:
    # StickyAction draws from env.np_random: locally the same Generator CartPole's resets use.
    env = gym.wrappers.StickyAction(env, repeat_action_probability=0.5)
    frames = [env.reset(seed=0)[0]]
    for action in np.random.default_rng(0).integers(0, 2, 40):
        obs, _, terminated, truncated, _ = env.step(int(action))
        frames.append(obs)
        if terminated or truncated:
            frames.append(env.reset()[0])
    frames.append(env.reset()[0])
    env.close()
    return frames


def test_a_wrapper_drawing_from_np_random_keeps_the_local_trajectory(provider: str) -> None:
    want = _sticky_run(gym.make("CartPole-v1"))
    got = _sticky_run(gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider))
    assert len(got) == len(want)
    for t, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"t={t}")


def test_np_random_seed_is_the_served_env_s(provider: str) -> None:
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider)
    try:
        first, _ = env.reset()  # unseeded: the served env draws its own entropy
        seed = env.unwrapped.np_random_seed
        assert seed == env.unwrapped.call("np_random_seed")
        local = gym.make("CartPole-v1")
        np.testing.assert_array_equal(local.reset(seed=seed)[0], first)  # the logged seed replays
    finally:
        env.close()


def _after_restart(provider: str) -> np.ndarray:
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider).unwrapped
    try:
        env.reset(seed=0)
        kill_worker(env._worker)
        obs, info = env.reset()  # replaces the worker
        assert info.get("worker_restarted") is True
        return obs
    finally:
        env.close()


def test_a_seeded_env_stays_reproducible_through_a_worker_restart(provider: str) -> None:
    np.testing.assert_array_equal(_after_restart(provider), _after_restart(provider))


def test_np_random_draws_that_write_into_the_caller_s_array_are_refused() -> None:
    local = gym.make("CartPole-v1")
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    try:
        local.reset(seed=0)
        env.reset(seed=0)
        deck = [1, 2, 3, 4]
        # The worker would shuffle its own copy: the caller's list stayed as it was, unsaid.
        with pytest.raises(TypeError, match=r"permutation\(x\)"):
            env.np_random.shuffle(deck)
        with pytest.raises(TypeError, match="out="):
            env.np_random.random(2, out=np.zeros(2))
        assert deck == [1, 2, 3, 4]
        # Neither drew: the served Generator goes on as the local one does.
        np.testing.assert_array_equal(env.np_random.permutation(8), local.np_random.permutation(8))
    finally:
        env.close()
        local.close()


def test_a_generator_set_before_the_first_reset_is_refused_not_ignored() -> None:
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    try:
        # It would have been kept on the client while the served env, made by the first
        # reset, drew its own entropy: an unseeded run the caller believed seeded.
        with pytest.raises(TypeError, match=r"reset\(seed=\.\.\.\)"):
            env.unwrapped.np_random = np.random.default_rng(123)
        with pytest.raises(TypeError, match=r"reset\(seed=\.\.\.\)"):
            env.np_random = np.random.default_rng(123)  # through the wrappers' setter
        env.reset(seed=0)
        with pytest.raises(TypeError, match=r"reset\(seed=\.\.\.\)"):
            env.unwrapped.np_random = np.random.default_rng(123)
    finally:
        env.close()
