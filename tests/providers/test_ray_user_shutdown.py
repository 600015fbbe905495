"""The user's own ``ray.shutdown()`` under live envs on a Ray the provider started: typed errors
(never a bare Ray exception), a quiet close, and nothing left running.

Runs without the shared cluster: each test starts (and ends) a local Ray of its own.
"""

from __future__ import annotations

import os
import warnings

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import ProviderUnavailableError, WorkerError

ray = pytest.importorskip("ray")

OPTIONS = {"address": "local", "num_cpus": 0.25, "init_kwargs": {"num_cpus": 2}}


def _quiet_close(*envs: gym.Env | gym.vector.VectorEnv) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "could not stop 1 ray worker(s)"
        for env in envs:
            env.close()


def test_shutdown_under_open_envs_gives_typed_errors_and_leaves_no_process(procs) -> None:
    if ray.is_initialized():
        ray.shutdown()
    before = procs.descendants(os.getpid())
    env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS)
    envs = gym.make_vec("OpenEnv/Echo-v0", 2, provider="ray", provider_options=OPTIONS)
    try:
        env.reset(seed=0)
        envs.reset(seed=0)
        started = procs.descendants(os.getpid()) - before
        assert procs.ray_cores(started)  # the provider started this Ray
        ray.shutdown()  # the user's own, while both envs run on it
        with pytest.raises(WorkerError, match="Ray was shut down"):  # the worker's last words
            env.step({"message": "x"})
        with pytest.raises(ProviderUnavailableError, match="Ray was shut down"):
            env.reset(seed=1)
        with pytest.raises(ProviderUnavailableError, match="Ray was shut down"):
            envs.step(envs.action_space.sample())
        assert not ray.is_initialized()  # no call started a new cluster behind the user's back
        _quiet_close(env, envs)
    finally:
        env.close()
        envs.close()
    assert not ray.is_initialized()
    assert not procs.wait_gone(started, 20)
