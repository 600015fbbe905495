"""Ctrl-C during a vector step drops only the connections whose reply was still due.

A worker that had answered before the interrupt is in frame: dropping its connection too only
made the next call reconnect (and, in a fork, ended the slice bound to it). The usual step
(one straight line) dropped every worker's. Real workers, real SIGINT.
"""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import ctrl_c_after, replied, stop_process

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("first", [0, 2], ids=["answered-read-first", "hung-read-first"])
@pytest.mark.parametrize("how", ["step", "step_async+step_wait"])
def test_ctrl_c_keeps_the_connections_of_workers_that_answered(how: str, first: int) -> None:
    envs = RemoteVectorEnv(3, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1,
                           step_timeout=30.0)
    pool = envs._pool
    frozen = pool.workers[2].pid
    try:
        envs.reset(seed=0)
        envs.step(np.zeros(3, dtype=np.int64))  # a usual step: the fast path is warm
        before = [c.connection for c in pool.clients]
        stop_process(frozen)
        # The pool reads first the worker that answered last the step before: the hung one
        # read first leaves the others' replies unread when the interrupt comes.
        pool._last = first
        # Once workers 0 and 1 have answered and only worker 2's reply is due.
        answered = lambda: replied(pool.clients[0]) and replied(pool.clients[1]) and pool.clients[2]._owed
        try:
            with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.0, when=answered):
                if how == "step":
                    envs.step(np.ones(3, dtype=np.int64))
                else:
                    envs.step_async(np.ones(3, dtype=np.int64))
                    envs.step_wait()
        finally:
            os.kill(frozen, signal.SIGCONT)
        assert [c.connection is b for c, b in zip(pool.clients, before)] == [True, True, False]
        envs.reset(seed=1)  # and the env carries on
        obs, *_ = envs.step(np.zeros(3, dtype=np.int64))
        assert obs.shape == (3, 4)
    finally:
        envs.close()
