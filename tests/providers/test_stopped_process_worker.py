"""A process worker frozen by SIGSTOP (``kill -STOP <pid>``): still alive, answering nothing.

Its provider names that state (as the docker provider names a paused container), so a
timeout says why, and stopping it resumes it first, so it shuts down as a running worker
does (its SIGTERM handler, exit 0) instead of waiting out the grace for a SIGKILL.
"""

from __future__ import annotations

import os

import gymnasium as gym
import pytest

import openenv_gym
from tests.conftest import stop_process
from tests.providers.conftest import running
from tests.security.helpers import workers_of

STOPPED = "stopped (SIGSTOP: frozen, it answers nothing)"

fork_modes = pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])


def _env(fork: bool) -> openenv_gym.RemoteEnv:
    """An Echo env on a process worker of its own, its first episode started."""
    env = gym.make("OpenEnv/Echo-v0", provider="process", timeout=1.0,
                   provider_options={"fork": fork}).unwrapped
    env.reset(seed=0)
    return env


@fork_modes
def test_a_timeout_on_a_stopped_worker_names_its_state(fork: bool) -> None:
    env = _env(fork)
    try:
        stop_process(env._worker.pid)
        with pytest.raises(openenv_gym.WorkerTimeoutError) as failure:
            env.step({"message": "x"})
        assert f"the worker's state: {STOPPED}" in str(failure.value), str(failure.value)
    finally:
        env.close()


@fork_modes
def test_closing_an_env_on_a_stopped_worker_shuts_it_down_cleanly(fork: bool) -> None:
    before = workers_of(os.getpid())
    env = _env(fork)
    proc = env._worker.proc
    stop_process(proc.pid)
    env.close()
    # Resumed, it ran its own SIGTERM shutdown (exit 0); left stopped, only the SIGKILL due
    # after the grace would have ended it (-9).
    assert proc.returncode == 0, proc.returncode
    assert not running({proc.pid})
    assert workers_of(os.getpid()) - before == set()


def test_the_vector_env_names_a_stopped_worker_it_replaces() -> None:
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=1,
                        step_timeout=1)
    try:
        envs.reset(seed=0)
        worker = envs.unwrapped.pool.workers[0]
        old = worker.proc
        stop_process(old.pid)
        _, _, _, truncated, info = envs.step(envs.action_space.sample())
        assert truncated[0] and info["worker_restarted"][0]
        assert f"(the worker {STOPPED})" in info["worker_error"][0], info["worker_error"][0]
        # The replaced worker was resumed to stop, not left for the SIGKILL after the grace.
        assert old.returncode == 0, old.returncode
        assert not running({old.pid}) and worker.pid != old.pid
    finally:
        envs.close()
