"""A vector env's workers sleep on the pool's bell (protocol/bell.py) between requests: each
gets it with its slice, the pool rings it once per round of sends, and steps taken after
pauses long enough for the workers' spin to run out (a policy's forward pass) step the envs
as Gymnasium's own vector env does."""

from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers OpenEnv/*)


def _eventfds(pid: int) -> int:
    found = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[eventfd]"
        except OSError:
            pass
    return found


def _rings(envs: gym.vector.VectorEnv) -> int:
    """The rings since the last call (reading an eventfd empties it; the workers never read)."""
    bell = envs.unwrapped.pool.clients[0].bell
    try:
        return os.eventfd_read(bell.fileno())
    except BlockingIOError:
        return 0


def test_each_worker_gets_the_bell_and_the_pool_rings_it_once_per_round() -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, provider="process", env_id="CartPole-v1")
    try:
        envs.reset(seed=0)
        pool = envs.unwrapped.pool
        bells = {id(client.bell) for client in pool.clients}
        assert len(bells) == 1 and pool.clients[0].bell is not None  # one bell for the pool
        assert all(_eventfds(w.pid) == 1 for w in pool.workers)
        _rings(envs)
        envs.step(np.array([0, 1]))
        assert _rings(envs) == 1  # after both requests, not once per worker
        envs.call("render")  # every request on the connections rings, not only steps
        assert _rings(envs) >= 1
    finally:
        envs.close()
    assert pool.clients == [] and pool._bell.closed


def test_no_bell_with_openenv_gym_bell_0(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENENV_GYM_BELL", "0")
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, provider="process", env_id="CartPole-v1")
    try:
        envs.reset(seed=0)
        pool = envs.unwrapped.pool
        assert all(client.bell is None for client in pool.clients)
        assert all(_eventfds(w.pid) == 0 for w in pool.workers)
        envs.step(np.array([0, 1]))
    finally:
        envs.close()


def test_steps_after_pauses_match_gymnasiums_vector_env() -> None:
    ours = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, provider="process", env_id="CartPole-v1")
    theirs = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")
    try:
        obs, _ = ours.reset(seed=3)
        expected, _ = theirs.reset(seed=3)
        np.testing.assert_array_equal(obs, expected)
        rng = np.random.default_rng(0)
        for k in range(40):
            if k % 2:
                time.sleep(0.005)  # longer than the workers' spin: they sleep on the bell
            actions = rng.integers(0, 2, 2)
            got, want = ours.step(actions), theirs.step(actions)
            for a, b in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(a, b)
    finally:
        ours.close()
        theirs.close()
