"""A forked child's copy of a vector env whose parent recorded a failed worker (on_worker_error
="raise", a timeout: the worker lives on) resets on the same workers, as any fork's copy does:
replacing the parent's worker is the parent's to do (a child may not)."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import WorkerTimeoutError
from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import in_forked_child, stop_process


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_child_resets_after_the_parents_raised_timeout() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1,
                           on_worker_error="raise", step_timeout=1)
    try:
        envs.reset(seed=0)
        worker = envs.workers[0]
        stop_process(worker.pid)
        with pytest.raises(WorkerTimeoutError):
            envs.step(np.zeros(2, dtype=np.int64))
        os.kill(worker.pid, signal.SIGCONT)
        time.sleep(0.2)
        # The child's reset was: WorkerError "a forked child cannot replace worker 0".
        assert in_forked_child(lambda: envs.reset(seed=1)) == 0
        envs.reset(seed=2)  # the parent still replaces its worker
        assert worker.restarts == 1
    finally:
        envs.close()
