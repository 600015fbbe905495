"""A vector reset that finds several workers failed (dead in the reset itself, or raised by an
earlier step with ``on_worker_error="raise"``) replaces them at the same time, as a step does:
one after the other, each hung worker's stop grace (SIGKILL 2 s after SIGTERM) and each start
added up to the reset's time."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from openenv_gym.errors import WorkerError
from openenv_gym.providers import process
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.vector_helpers import kill_worker

pytestmark = pytest.mark.timeout(180)

N = 2
#: Only a hang guard: how long a restart waits for the other to begin before going on alone.
GUARD = 20.0


def _gate_restarts(monkeypatch: pytest.MonkeyPatch, workers: list[Any]) -> list[tuple[str, int]]:
    """Make each process worker's restart note when it begins and ends, and wait (up to
    :data:`GUARD`) at its beginning until every one of ``workers`` began: restarts run one
    after the other note ``begin, end, begin, end``; run together, ``begin, begin, end, end``."""
    events: list[tuple[str, int]] = []
    begun: set[int] = set()
    cond = threading.Condition()
    real = process.ProcessWorker.restart

    def restart(worker: process.ProcessWorker) -> None:
        index = next(k for k, w in enumerate(workers) if w is worker)
        with cond:
            events.append(("begin", index))
            begun.add(index)
            cond.notify_all()
            cond.wait_for(lambda: len(begun) == len(workers), timeout=GUARD)
        try:
            real(worker)
        finally:
            with cond:
                events.append(("end", index))

    monkeypatch.setattr(process.ProcessWorker, "restart", restart)
    return events


def _assert_together(events: list[tuple[str, int]]) -> None:
    assert sorted(index for kind, index in events if kind == "begin") == list(range(N))
    # was: begin, end (after GUARD), begin, end
    assert [kind for kind, _ in events] == ["begin"] * N + ["end"] * N, \
        f"the failed workers were restarted one after the other: {events}"


def _steps_on(envs: RemoteVectorEnv) -> None:
    _, rewards, terminated, truncated, _ = envs.step(np.zeros(N, dtype=np.int64))
    assert rewards.tolist() == [1.0] * N and not (terminated | truncated).any()


def test_workers_dead_in_a_reset_are_restarted_together(monkeypatch: pytest.MonkeyPatch) -> None:
    envs = RemoteVectorEnv(N, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1)
    try:
        envs.reset(seed=0)
        pids = [w.pid for w in envs.workers]
        events = _gate_restarts(monkeypatch, envs.workers)
        for worker in envs.workers:
            kill_worker(worker)
        obs, infos = envs.reset(seed=1)
        _assert_together(events)
        assert infos["worker_restarted"].tolist() == [True] * N
        assert all(w.pid not in pids and w.alive() for w in envs.workers)
        assert np.all(np.abs(obs) < 0.05)  # CartPole's reset states
        _steps_on(envs)
    finally:
        envs.close()


def test_workers_raised_failed_are_restarted_together_by_the_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    envs = RemoteVectorEnv(N, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1,
                           on_worker_error="raise")
    try:
        envs.reset(seed=0)
        for worker in envs.workers:
            kill_worker(worker)
        with pytest.raises(WorkerError):
            envs.step(np.zeros(N, dtype=np.int64))
        events = _gate_restarts(monkeypatch, envs.workers)
        _, infos = envs.reset(seed=1)
        _assert_together(events)
        assert infos["worker_restarted"].tolist() == [True] * N
        assert all(w.restarts == 1 and w.alive() for w in envs.workers)
        _steps_on(envs)
    finally:
        envs.close()
