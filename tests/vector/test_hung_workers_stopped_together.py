"""A vector step on which several workers hang replaces them at the same time: each hung worker
gets its SIGTERM before any other's grace (SIGKILL 2 s later) has run out, so the step fails
after one grace, not one per hung worker (two workers stopped one after the other: ~4 s)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from openenv_gym.providers import process
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.toy_envs import HANG_ID, served

pytestmark = pytest.mark.timeout(180)


def test_hung_workers_of_a_step_get_their_sigterm_together(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, int]] = []
    real = process.terminate

    def terminate(proc: Any, grace: float = 2.0) -> None:
        events.append(("SIGTERM", proc.pid))
        try:
            real(proc, grace)
        finally:
            events.append(("gone", proc.pid))

    monkeypatch.setattr(process, "terminate", terminate)
    envs = RemoteVectorEnv(2, "gym", env_id=served(HANG_ID), provider="process",
                           envs_per_worker=1, step_timeout=3.0)
    try:
        envs.reset(seed=0)
        pids = [w.pid for w in envs.workers]
        _, _, _, truncations, infos = envs.step(np.ones(2, dtype=np.int64))  # both hang
        stops = list(events)
        assert truncations.tolist() == [True, True] and infos["worker_restarted"].tolist() == [True, True]
        assert sorted(pid for kind, pid in stops if kind == "SIGTERM") == sorted(pids)
        # was: SIGTERM, gone (after the 2 s grace), SIGTERM, gone
        assert [kind for kind, _ in stops] == ["SIGTERM", "SIGTERM", "gone", "gone"], \
            f"the hung workers were stopped one after the other: {stops}"
        assert [w.pid for w in envs.workers] != pids
        _, rewards, *_ = envs.step(np.zeros(2, dtype=np.int64))  # the fresh workers step
        assert rewards.tolist() == [0.0, 0.0]
    finally:
        envs.close()
