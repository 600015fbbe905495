"""The vector env reads first the reply of the worker that answered last the step before, so
that waiting for it is the trainer's only wake-up of the step. Real workers; a worker is
made late by stopping it (SIGSTOP) until its peer's reply is in."""

from __future__ import annotations

import os
import signal
import threading

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import stop_process

pytestmark = pytest.mark.timeout(120)


def test_the_worker_that_answered_last_is_read_first_next_step() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1)
    pool = envs._pool
    pids = [w.pid for w in pool.workers]
    local = [gym.make("CartPole-v1") for _ in range(2)]
    try:
        envs.reset(seed=0)
        for i, env in enumerate(local):
            env.reset(seed=i)  # the vector env's seed=0 seeds its envs 0 and 1
        for late in (1, 0, 1, None):
            if late is not None:
                stop_process(pids[late])
                timer = threading.Timer(0.2, os.kill, [pids[late], signal.SIGCONT])
                timer.start()
            try:
                obs, *_ = envs.step(np.array([0, 1]))
            finally:
                if late is not None:
                    timer.join()
            if late is not None:
                assert pool._last == late, f"worker {late} answered last, yet is not read first next"
            # Read in either order, each env's results land in its own row.
            want = np.stack([local[0].step(0)[0], local[1].step(1)[0]])
            np.testing.assert_array_equal(obs, want)
        assert pool.receive_slices([]) == {}  # nothing sent, nothing to read (nor to order)
    finally:
        envs.close()
