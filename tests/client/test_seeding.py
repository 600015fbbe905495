"""A single remote env's seeds reproduce: np_random is the served env's, and seeds survive restarts."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

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
