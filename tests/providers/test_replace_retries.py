"""A replacement worker that fails to start (a machine under load past ``startup_timeout``, an
engine hiccup) is started again (:meth:`Worker.replace`), a few times, before the vector env's
step or the single env's reset gives up."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import EnvServerError, WorkerConnectionError, WorkerCrashedError, WorkerError
from openenv_gym.providers.base import RESTART_ATTEMPTS
from tests.providers.flaky_start_env import GYM_ID, single_env
from tests.vector.vector_helpers import kill_worker



def _vector(failures_file: Path):
    failures_file.write_text("0")
    return gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=GYM_ID, failures_file=str(failures_file),
                        provider="process", envs_per_worker=1)


def test_a_vector_envs_replacement_that_fails_to_start_once_is_started_again(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    envs = _vector(failures)
    try:
        envs.reset(seed=0)
        victim = envs.unwrapped.workers[1]
        failures.write_text("1")  # the first replacement's env constructor raises
        kill_worker(victim)
        _, rewards, _, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
        assert failures.read_text() == "0", "the replacement did not start the env"
        assert truncated.tolist() == [False, True] and infos["worker_restarted"][1]
        assert rewards.tolist() == [1.0, 0.0]
        assert victim.alive() and victim.restarts == 2
        envs.step(np.zeros(2, dtype=np.int64))  # NEXT_STEP autoreset: env 1's fresh episode starts
        _, rewards, _, truncated, _ = envs.step(np.zeros(2, dtype=np.int64))
        assert rewards.tolist() == [1.0, 1.0] and not truncated.any()
    finally:
        envs.close()


def test_a_replacement_that_never_starts_ends_the_step_naming_the_tries(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    envs = _vector(failures)
    workers = list(envs.unwrapped.workers)
    try:
        envs.reset(seed=0)
        failures.write_text(str(RESTART_ATTEMPTS))
        kill_worker(workers[0])
        with pytest.raises(WorkerError) as raised:
            envs.step(np.zeros(2, dtype=np.int64))
        text = str(raised.value)
        assert "restarting it failed too" in text
        assert "this start fails on purpose" in text  # the cause, from the worker's log
        assert failures.read_text() == "0"  # every start was tried
        assert workers[0].restarts == RESTART_ATTEMPTS
    finally:
        envs.close()
    assert not any(w.alive() for w in workers)


def test_a_single_envs_reset_starts_its_replacement_again(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    env = single_env(failures)
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        kill_worker(worker)
        # Which one depends on whether the request was still sent before the socket closed.
        with pytest.raises((WorkerCrashedError, WorkerConnectionError)):
            env.step(0)
        failures.write_text("1")
        _, info = env.reset()
        assert info.get("worker_restarted") and failures.read_text() == "0"
        assert worker.restarts == 2
        assert env.step(0)[1] == 1.0
        # Every start failing: the reset raises the env's own error, and the env stays usable.
        kill_worker(worker)
        failures.write_text(str(RESTART_ATTEMPTS))
        with pytest.raises(EnvServerError, match="this start fails on purpose"):
            env.reset()
        assert env.reset()[1].get("worker_restarted")
    finally:
        env.close()
