"""A process worker killed mid-step (SIGKILL, an OOM kill) leaves no child running, also
where no cgroup holds it (a non-root trainer, ``cgroups=False``): the step's child runs in a
session of its own, so neither the worker's group kill nor a cgroup ended it, and it was
adopted by init for good. The fork server, a subreaper, now adopts and ends it."""

from __future__ import annotations

import os
import signal
import threading

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import WorkerError
from tests.security.helpers import cmdline, descendants, proc_status, wait_until

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="forking needs pidfds (Linux 5.3+)")


def test_a_killed_worker_s_running_child_is_ended_without_a_cgroup(procs) -> None:
    env = gym.make("OpenEnv/Coding-v0", provider="process", provider_options={"cgroups": False})
    children: set[int] = set()
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker.pid
        server = int(proc_status(worker)["PPid"])
        assert b"openenv_gym.server.forkserver" in b" ".join(cmdline(server)), "workers are forked"
        failures: list[BaseException] = []

        def step() -> None:
            try:
                env.step({"code": "import time\nwhile True: time.sleep(1)", "timeout": 120.0})
            except WorkerError as exc:
                failures.append(exc)

        stepping = threading.Thread(target=step)
        stepping.start()
        assert wait_until(lambda: bool(descendants(worker)), 60), "the step's child started"
        children = descendants(worker)
        os.kill(worker, signal.SIGKILL)
        stepping.join(60)
        assert failures, "the step saw its worker die"
        assert not procs.wait_gone(children, 30.0), "the killed worker's child lives on"
    finally:
        env.close()
        for pid in procs.running(children):
            os.kill(pid, signal.SIGKILL)
