"""A vector env's workers sleep on the pool's bell (protocol/bell.py) between requests: each
gets it with its slice, the pool rings it once per round of sends, and steps taken after
pauses long enough for the workers' spin to run out (a policy's forward pass) step the envs
as Gymnasium's own vector env does."""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers OpenEnv/*)
from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import in_forked_child
from tests.vector.vector_helpers import assert_same, step_both


def _eventfds(worker: Any) -> int:
    """The eventfds a worker's processes hold (a container's, seen from the host)."""
    container_id = getattr(worker, "container_id", None)
    if container_id:
        top = subprocess.run(["docker", "top", container_id, "-o", "pid"], check=True,
                             capture_output=True, text=True, timeout=30).stdout.split()[1:]
        pids = [int(pid) for pid in top]
    else:
        pids = [worker.pid]
    found = 0
    for pid in pids:
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


def test_each_worker_gets_the_bell_and_the_pool_rings_it_once_per_round(provider: str) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, provider=provider, env_id="CartPole-v1")
    try:
        envs.reset(seed=0)
        pool = envs.unwrapped.pool
        bells = {id(client.bell) for client in pool.clients}
        assert len(bells) == 1 and pool.clients[0].bell is not None  # one bell for the pool
        assert all(_eventfds(w) == 1 for w in pool.workers)  # in a container too
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
        assert all(_eventfds(w) == 0 for w in pool.workers)
        envs.step(np.array([0, 1]))
    finally:
        envs.close()


def test_no_bell_where_the_columns_travel_in_messages() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", shared_memory=False)
    try:
        envs.reset(seed=0)
        pool = envs.pool
        # was: the pool made a bell for these Unix-socket workers and rang it every step,
        # though only a slice in shared memory hands it over
        assert pool._bell is None and all(client.bell is None for client in pool.clients)
        assert all(_eventfds(w) == 0 for w in pool.workers)
        envs.step(np.array([0, 1]))
    finally:
        envs.close()


def test_a_forked_copy_hands_its_slices_a_bell_of_its_own() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process")
    try:
        envs.reset(seed=0)
        pool = envs.pool
        parents = pool._bell

        def child() -> None:
            envs.reset(seed=1)  # the child's own slices on the same workers
            mine = pool._bell
            assert mine is not parents and mine.pid == os.getpid() and not mine.closed
            assert all(client.bell is mine for client in pool.clients)
            assert all(_eventfds(w) == 2 for w in pool.workers)  # the parent's and this one
            os.eventfd_read(mine.fileno())
            time.sleep(0.005)  # past the workers' spin: they sleep on this bell
            envs.step(np.array([0, 1]))
            assert os.eventfd_read(mine.fileno()) == 1
            envs.close()

        assert in_forked_child(child) == 0
        assert pool._bell is parents and parents.pid == os.getpid() and not parents.closed
        envs.step(np.array([1, 0]))  # the parent's slices still answer, their bell still rings
    finally:
        envs.close()


def test_steps_after_pauses_match_gymnasiums_vector_env() -> None:
    ours = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, provider="process", env_id="CartPole-v1")
    theirs = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync")
    try:
        assert_same(ours.reset(seed=3), theirs.reset(seed=3), "reset")
        rng = np.random.default_rng(0)
        for k in range(40):
            if k % 2:
                time.sleep(0.005)  # longer than the workers' spin: they sleep on the bell
            step_both(ours, theirs, rng.integers(0, 2, 2), f"step {k}")
    finally:
        ours.close()
        theirs.close()
