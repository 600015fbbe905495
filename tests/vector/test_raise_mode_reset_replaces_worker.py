"""on_worker_error="raise": the typed error is raised, and the next reset() replaces the failed
worker (as a single env's next reset does), instead of raising the same error forever."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import WorkerCrashedError, WorkerError, WorkerTimeoutError
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.vector_helpers import freeze_worker, kill_worker

N = 4


@pytest.mark.parametrize("fault, error", [(kill_worker, WorkerCrashedError),
                                          (freeze_worker, WorkerTimeoutError)],
                         ids=["killed", "hung"])
def test_reset_after_a_raised_worker_error_replaces_the_worker(provider: str, fault, error) -> None:
    envs = RemoteVectorEnv(N, "gym", env_id="CartPole-v1", provider=provider, envs_per_worker=2,
                           on_worker_error="raise", step_timeout=2)
    try:
        envs.reset(seed=0)
        victim = envs.workers[0]
        fault(victim)
        with pytest.raises(error, match=r"the next reset\(\) replaces the worker"):
            envs.step(np.zeros(N, dtype=np.int64))
        # The other worker's envs stepped unseen: stepping on needs a reset first.
        with pytest.raises(gym.error.ResetNeeded):
            envs.step(np.zeros(N, dtype=np.int64))
        obs, _ = envs.reset(seed=1)
        assert victim.restarts == 1 and victim.alive()
        assert np.all(np.abs(obs) < 0.05)  # CartPole's reset states, every env
        _, rewards, terminated, truncated, _ = envs.step(np.zeros(N, dtype=np.int64))
        np.testing.assert_array_equal(rewards, [1.0] * N)
        assert not (terminated | truncated).any()
    finally:
        envs.close()


def test_partial_reset_after_a_raised_error_reports_the_other_envs_restarted() -> None:
    envs = RemoteVectorEnv(N, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=2,
                           on_worker_error="raise")
    try:
        envs.reset(seed=0)
        kill_worker(envs.workers[0])
        with pytest.raises(WorkerError):
            envs.step(np.zeros(N, dtype=np.int64))
        envs.reset(options={"reset_mask": np.array([True, False, True, True])})
        _, rewards, _, truncated, infos = envs.step(np.zeros(N, dtype=np.int64))
        np.testing.assert_array_equal(truncated, [False, True, False, False])
        assert infos["worker_restarted"][1] and infos["_worker_restarted"].tolist() == [False, True, False, False]
    finally:
        envs.close()


@pytest.mark.parametrize("on_worker_error", ["raise", "restart"])
def test_a_reset_on_a_replaced_worker_says_so_in_its_infos(on_worker_error: str) -> None:
    # A single env's reset on a fresh worker reports worker_restarted; a vector env's did not,
    # whether it replaced the worker itself (a dead worker found by the reset, or one whose
    # failure was raised) or a call() had replaced it before.
    envs = RemoteVectorEnv(N, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=2,
                           on_worker_error=on_worker_error)
    try:
        envs.reset(seed=0)
        for _ in range(2):
            kill_worker(envs.workers[1])
            if on_worker_error == "raise":
                with pytest.raises(WorkerCrashedError):
                    envs.step(np.zeros(N, dtype=np.int64))
            _, infos = envs.reset(seed=1)
            assert infos["_worker_restarted"].tolist() == [False, False, True, True], infos
            assert "worker" in infos["worker_error"][2]
        _, infos = envs.reset(seed=2)  # nothing replaced since
        assert "worker_restarted" not in infos
        kill_worker(envs.workers[0])
        with pytest.raises(WorkerCrashedError):
            envs.get_attr("gravity")  # replaced here (restart), or at the reset (raise)
        _, infos = envs.reset(seed=3)
        assert infos["_worker_restarted"].tolist() == [True, True, False, False], infos
    finally:
        envs.close()
