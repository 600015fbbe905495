"""A worker's replacement that fails to start (a machine under load past ``startup_timeout``, an
engine hiccup) is tried again, a few times, before the step gives up with ``WorkerError``."""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import WorkerError
from openenv_gym.vector.env import REPLACE_ATTEMPTS
from tests.vector.flaky_start_env import ENV_ID
from tests.vector.vector_helpers import kill_worker


def _envs(failures_file: Path):
    failures_file.write_text("0")
    return gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=f"tests.vector.flaky_start_env:{ENV_ID}",
                        failures_file=str(failures_file), provider="process", envs_per_worker=1)


def test_a_replacement_that_fails_to_start_once_is_started_again(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    envs = _envs(failures)
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


def test_a_replacement_that_never_starts_ends_the_step_naming_each_try(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    envs = _envs(failures)
    workers = list(envs.unwrapped.workers)
    try:
        envs.reset(seed=0)
        failures.write_text(str(REPLACE_ATTEMPTS))
        kill_worker(workers[0])
        with pytest.raises(WorkerError) as raised:
            envs.step(np.zeros(2, dtype=np.int64))
        text = str(raised.value)
        assert f"restarting it failed {REPLACE_ATTEMPTS} times" in text
        assert "this start fails on purpose" in text  # the cause, from the worker's log
        assert failures.read_text() == "0"
    finally:
        envs.close()
    assert not any(w.alive() for w in workers)
    assert not any(os.path.exists(f"/proc/{w.pid}") for w in workers if w.pid)
