"""Ctrl-C while a vector env's pool restarts several failed workers at the same time
(``WorkerPool.restart_all``) waits for the restarts in flight and reaches each replacement:
none is left running unowned or with its connection on the stopped worker, and ``close()``
stops them all."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from openenv_gym.providers.process import ProcessProvider, ProcessWorker
from openenv_gym.vector.pool import WorkerPool
from tests.conftest import ctrl_c_after
from tests.security.helpers import wait_until, workers_of
from tests.vector.vector_helpers import kill_worker

pytestmark = pytest.mark.timeout(120)

#: Only a hang guard.
GUARD = 30.0


def test_ctrl_c_during_restart_all_waits_for_the_restarts_and_reaches_them(monkeypatch: pytest.MonkeyPatch) -> None:
    me = os.getpid()
    before = workers_of(me)
    pool = WorkerPool(ProcessProvider(), "echo", num_envs=2)
    try:
        pids = [w.pid for w in pool.workers]
        begun: list[int] = []
        interrupted = threading.Event()
        real = ProcessWorker.restart

        def restart(worker: ProcessWorker) -> None:
            begun.append(pool.workers.index(worker))
            interrupted.wait(GUARD)  # in flight when the Ctrl-C lands
            real(worker)

        def on_sigint(signum: int, frame: Any) -> None:
            interrupted.set()
            raise KeyboardInterrupt

        monkeypatch.setattr(ProcessWorker, "restart", restart)
        old_handler = signal.signal(signal.SIGINT, on_sigint)
        try:
            for worker in pool.workers:
                kill_worker(worker)
            with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.0, when=lambda: len(begun) == 2):
                pool.restart_all([0, 1])
        finally:
            signal.signal(signal.SIGINT, old_handler)
            interrupted.set()
        assert interrupted.is_set() and sorted(begun) == [0, 1]
        # Both replacements were waited for, and reached: they serve.
        assert all(w.alive() and w.pid not in pids for w in pool.workers)
        replies = pool.exchange({0: [{"op": "reset"}], 1: [{"op": "reset"}]})
        assert all(reply[0]["ok"] for reply in replies.values()), replies
    finally:
        pool.close()
    assert wait_until(lambda: not workers_of(me) - before, 10), "a replacement outlived close()"
