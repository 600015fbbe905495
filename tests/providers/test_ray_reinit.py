"""Ray shut down and made anew (``ray.shutdown(); ray.init()``, a notebook cell run again) under
open envs: their calls raise typed errors, closing them is quiet, and the Ray the provider
started is still shut down with its last worker, while a Ray of the user's is left alone.

Runs without the shared cluster: each test starts (and ends) a local Ray of its own.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import ProviderUnavailableError, WorkerError

ray = pytest.importorskip("ray")

OPTIONS = {"address": "local", "num_cpus": 0.25, "init_kwargs": {"num_cpus": 2}}


def test_an_env_whose_ray_was_made_anew_raises_typed_errors_and_the_new_ray_still_ends() -> None:
    if ray.is_initialized():
        ray.shutdown()
    old = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS)
    new = None
    try:
        old.reset(seed=0)
        ray.shutdown()
        # The provider of a new env starts a new Ray: the old env's actors are unknown there
        # (Ray raised a bare Exception, "it's from a different cluster", for every call).
        new = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS)
        new.reset(seed=0)
        with pytest.raises(WorkerError):
            old.step({"message": "x"})
        with pytest.raises(ProviderUnavailableError, match="Ray was shut down"):
            old.reset(seed=1)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # it warned "could not stop 1 ray worker(s)"
            old.close()
        assert ray.is_initialized() and new.step({"message": "on"})[0]["echo"] == "on"
    finally:
        old.close()
        if new is not None:
            new.close()
    # The Ray the provider started ends with its last worker (it stayed up: the old env
    # was still counted as one of its users).
    assert not ray.is_initialized()


def test_closing_an_env_of_a_ray_the_user_made_anew_leaves_the_users_ray_running() -> None:
    if ray.is_initialized():
        ray.shutdown()
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="ray",
                        envs_per_worker=1, provider_options=OPTIONS)
    try:
        envs.reset(seed=0)
        ray.shutdown()
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)  # the user's own
        # The failed workers cannot be replaced on it: the provider's Ray is gone.
        with pytest.raises(ProviderUnavailableError, match="Ray was shut down"):
            envs.step(envs.action_space.sample())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            envs.close()
        assert ray.is_initialized() and ray.get(ray.put(7)) == 7
    finally:
        envs.close()
        ray.shutdown()
