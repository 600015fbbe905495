"""A worker killed while a vector step waits on it: the error (``on_worker_error="raise"``) and
the ``worker_error`` info (``"restart"``) say how it ended, as a single env's error does. The
connection drops a moment before the exit status can be read, and the description, made at
once, read the worker as still running: "killed by signal 9 (SIGKILL)" was missing from most
such errors."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from openenv_gym.errors import WorkerCrashedError
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.toy_envs import HANG_ID, served

#: The hang env's action 1 never returns: the step is in flight on worker 1 when it is killed.
HANG = served(HANG_ID)
#: Kills per test: one described too early was most of them, so a few leave no chance to pass by luck.
KILLS = 3


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _kill_once_spinning(pid: int) -> threading.Thread:
    """Kill ``pid`` once it spins in the hung step (its CPU time grows), on another thread."""
    def run() -> None:
        start, deadline = _cpu_ticks(pid), time.monotonic() + 60  # a hang guard only
        while _cpu_ticks(pid) < start + 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("mode", ["raise", "restart"])
def test_a_worker_killed_mid_step_is_named_killed(mode: str) -> None:
    envs = RemoteVectorEnv(2, "gym", env_id=HANG, provider="process", envs_per_worker=1,
                           on_worker_error=mode, step_timeout=60)
    try:
        for _ in range(KILLS):
            envs.reset(seed=0)
            killer = _kill_once_spinning(envs.workers[1].pid)
            if mode == "raise":
                with pytest.raises(WorkerCrashedError) as caught:
                    envs.step(np.array([0, 1]))
                text = str(caught.value)
            else:
                infos = envs.step(np.array([0, 1]))[4]
                assert infos["_worker_error"].tolist() == [False, True], infos
                text = infos["worker_error"][1]
            killer.join()
            assert "worker 1 (envs 1..1) failed" in text, text
            assert "(the worker killed by signal 9 (SIGKILL))" in text, text
    finally:
        envs.close()
