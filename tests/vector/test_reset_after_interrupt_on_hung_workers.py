"""A vector env's reset after Ctrl-C cut a step short on hung workers: the reset waits for
the interrupted step on every worker (so that none runs it after the reset), all at once
within one ``step_timeout``, then replaces the workers still busy with it.

Two faults: the worker whose reply was being read when the interrupt landed was let go of
twice (by its read, then by the vector env's cleanup), which discarded the wait for it; and
each worker's wait started only after the last one's ended, so N hung workers cost the reset
N timeouts before it replaced them (eight workers of Coding-v0: 20 minutes). Here worker 1
resumes the moment worker 0's wait ends: had its own wait only begun then, it would have
finished its step in time and not been replaced. Real workers, real SIGINT.
"""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import ctrl_c_after, stop_process

pytestmark = pytest.mark.timeout(180)


def test_reset_waits_for_interrupted_steps_of_hung_workers_together() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1,
                           step_timeout=5.0)
    pool = envs._pool
    pids = [w.pid for w in pool.workers]
    try:
        envs.reset(seed=0)
        for pid in pids:
            stop_process(pid)
        # Once both steps went out (neither worker can read them): the interrupt finds both due.
        with pytest.raises(KeyboardInterrupt), \
                ctrl_c_after(0.0, when=lambda: all(c.connection is not None and c._owed for c in pool.clients)):
            envs.step(np.zeros(2, dtype=np.int64))
        assert [c._settling is not None for c in pool.clients] == [True, True], \
            "an interrupted step is no longer waited for: the reset could run before it"

        done = threading.Event()

        def resume_worker_1_after_worker_0s_wait() -> None:
            while pool.clients[0]._settling is not None and not done.wait(0.005):
                pass
            os.kill(pids[1], signal.SIGCONT)

        resumer = threading.Thread(target=resume_worker_1_after_worker_0s_wait, daemon=True)
        resumer.start()
        try:
            _, infos = envs.reset(seed=1)
        finally:
            done.set()
            resumer.join()
        assert [w.pid != pid for w, pid in zip(pool.workers, pids)] == [True, True], \
            "a worker still busy at the reset's one deadline was not replaced"
        assert list(infos["worker_restarted"]) == [True, True]
        envs.step(np.ones(2, dtype=np.int64))  # the fresh workers step
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        envs.close()
