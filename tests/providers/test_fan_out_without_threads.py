"""The fan-out of worker starts and restarts (``base.run_together``) runs a start or restart
whose thread cannot start (a pids limit reached, interpreter exit) in the calling thread, once,
instead of failing the pool with ``RuntimeError: can't start new thread`` (as ``make_vec``
did) or running it twice (the executor queued it before its thread failed to start: a thread
it had already may take it too)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from openenv_gym.providers import base
from openenv_gym.providers.process import ProcessProvider, ProcessWorker
from openenv_gym.vector.pool import WorkerPool
from tests.vector.vector_helpers import kill_worker

pytestmark = pytest.mark.timeout(120)


class OneThreadOnly(ThreadPoolExecutor):
    """An executor that starts its first thread, then fails to start any other as CPython does
    out of threads: after queuing the call, in ``submit()``."""

    def _adjust_thread_count(self) -> None:
        if self._threads:
            raise RuntimeError("can't start new thread")
        super()._adjust_thread_count()


def test_starts_whose_threads_cannot_start_run_here_once(monkeypatch: pytest.MonkeyPatch) -> None:
    starts: list[int] = []
    real = ProcessProvider._start_one

    def start_one(self: ProcessProvider, env: str, env_kwargs: dict[str, Any], index: int, pool: str) -> Any:
        starts.append(index)
        return real(self, env, env_kwargs, index, pool)

    monkeypatch.setattr(ProcessProvider, "_start_one", start_one)
    monkeypatch.setattr(base, "ThreadPoolExecutor", OneThreadOnly)
    provider = ProcessProvider()
    workers = provider.start("echo", 3)  # was: RuntimeError: can't start new thread
    try:
        assert sorted(starts) == [0, 1, 2]
        assert all(w.alive() for w in workers) and len({w.pid for w in workers}) == 3
    finally:
        provider.stop_all(workers)


def test_restarts_whose_threads_cannot_start_run_here_once(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = WorkerPool(ProcessProvider(), "echo", num_envs=2)
    try:
        pids = [w.pid for w in pool.workers]
        restarted: list[int] = []
        real = ProcessWorker.restart

        def restart(worker: ProcessWorker) -> None:
            restarted.append(pool.workers.index(worker))
            real(worker)

        monkeypatch.setattr(ProcessWorker, "restart", restart)
        monkeypatch.setattr(base, "ThreadPoolExecutor", OneThreadOnly)
        for worker in pool.workers:
            kill_worker(worker)
        assert pool.restart_all([0, 1]) == {}
        assert sorted(restarted) == [0, 1]
        assert all(w.alive() and w.pid not in pids for w in pool.workers)
        replies = pool.exchange({0: [{"op": "reset"}], 1: [{"op": "reset"}]})
        assert all(reply[0]["ok"] for reply in replies.values()), replies
    finally:
        pool.close()

