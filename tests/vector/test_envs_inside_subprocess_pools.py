"""``gym.make("OpenEnv/...")`` inside the process pools trainers already use: SB3's
``SubprocVecEnv`` and Gymnasium's ``AsyncVectorEnv`` (every start method), and
``multiprocessing.Pool`` workers that keep an env in a global and are terminated (SIGTERM)
without closing it. Each runs, and once the pool's processes are gone none of what they
started is left: no worker, fork server or sentinel, no runtime folder, no cgroup. A parent
that already made an env (inherited by forked pool processes) steps on unharmed."""

from __future__ import annotations

import functools
import multiprocessing
import os
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.providers._runtime import runtime_dir
from tests.security.helpers import (fork_servers_of, owned_cgroups, sentinels_of, wait_until,
                                    workers_of)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

# With the module prefix (README): a spawned pool process unpickles these without importing
# this module, and Gymnasium 1.x loads no plugin by itself ("Namespace OpenEnv not found").
_make_echo = functools.partial(gym.make, "openenv_gym:OpenEnv/Echo-v0", provider="process")
_make_finrl = functools.partial(gym.make, "openenv_gym:OpenEnv/FinRL-v0", provider="process")


def _left_by(owner: int) -> list[Any]:
    """What a (gone) process ``owner`` started and left: processes, runtime folders, cgroups.
    The runtime folder is listed without sweeping, which would clean up what it looks for."""
    folders = [e for e in os.listdir(runtime_dir(sweep=False)) if e.split("-", 1)[0] == str(owner)]
    return [*workers_of(owner), *fork_servers_of(owner), *sentinels_of(owner), *folders,
            *owned_cgroups(owner)]


def _assert_nothing_left(owners: set[int]) -> None:
    left: dict[int, list[Any]] = {}

    def clean() -> bool:
        left.clear()
        left.update({o: found for o in owners if (found := _left_by(o))})
        return not left

    # Workers notice their owner's exit within a moment; the bound is only for a loaded host.
    assert wait_until(clean, 30), f"left behind by pool processes: {left}"


@pytest.fixture
def parent_env() -> Any:
    """An env the trainer made before its pool: a forked pool process inherits it."""
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    env.reset(seed=0)
    yield env
    env.step(0)  # the pool's processes (their exits, their copies) left it working
    env.close()


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_sb3_subproc_vec_env_of_openenv_ids(method: str, parent_env: Any) -> None:
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import SubprocVecEnv

    for make, action in ((_make_finrl, None), (_make_echo, {"message": "hi"})):
        envs = SubprocVecEnv([make, make], start_method=method)
        owners = {p.pid for p in envs.processes}
        try:
            envs.reset()
            actions = (np.stack([envs.action_space.sample() for _ in range(2)]) if action is None
                       else [action] * 2)
            rewards = envs.step(actions)[1]
            assert rewards.shape == (2,)
        finally:
            envs.close()
        _assert_nothing_left(owners)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_gymnasium_async_vector_env_of_openenv_ids(context: str, parent_env: Any) -> None:
    envs = gym.vector.AsyncVectorEnv([_make_finrl, _make_finrl], context=context)
    owners = {p.pid for p in envs.processes}
    try:
        envs.reset(seed=1)
        obs = envs.step(envs.action_space.sample())[0]
        assert obs.shape == (2, *envs.single_observation_space.shape)
    finally:
        envs.close()
    _assert_nothing_left(owners)


_POOL_ENV: Any = None


def _make_pool_env() -> None:
    global _POOL_ENV
    _POOL_ENV = _make_finrl()
    _POOL_ENV.reset(seed=0)


def _pool_step(_: int) -> int:
    _POOL_ENV.step(_POOL_ENV.action_space.sample())
    return os.getpid()


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_terminated_multiprocessing_pool_workers_leave_nothing(context: str, parent_env: Any) -> None:
    pool = multiprocessing.get_context(context).Pool(2, initializer=_make_pool_env)
    try:
        owners = set(pool.map(_pool_step, range(4))) | {p.pid for p in pool._pool}
    finally:
        pool.terminate()  # SIGTERM: the workers' envs are never closed
        pool.join()
    _assert_nothing_left(owners)
