"""A single env names its worker, as a vector env does (``envs.workers[i]``):
``env.unwrapped.worker``, whose ``pid`` is the running worker's, the new one's after a
replacement."""

from __future__ import annotations

import os
import signal

import gymnasium as gym

from openenv_gym.providers.base import Worker
from tests.security.helpers import wait_until, workers_of


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie not yet reaped runs nothing
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_the_worker_is_the_running_worker_process_and_the_new_one_after_a_restart() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process")
    try:
        worker = env.unwrapped.worker
        assert isinstance(worker, Worker)
        first = worker.pid
        # The live process, and the worker this env started (its command line names it).
        assert _running(first) and os.path.exists(f"/proc/{first}")
        assert first in workers_of(os.getpid())
        env.reset(seed=0)
        os.kill(first, signal.SIGKILL)
        assert wait_until(lambda: not _running(first), 30)  # hang guard
        env.reset(seed=0)  # replaces the dead worker
        assert env.unwrapped.worker is worker and worker.restarts == 1  # one object, as in a vector env
        second = worker.pid
        assert second != first and _running(second) and second in workers_of(os.getpid())
        assert env.step({"message": "hi"})[0]["echo"] == "hi"
    finally:
        env.close()
    assert env.unwrapped.worker is None
    assert wait_until(lambda: not os.path.exists(f"/proc/{second}"), 30)  # hang guard: it was stopped
    try:
        os.kill(second, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"worker {second} still exists after close()")
