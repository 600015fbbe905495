"""The Docker engine restarted mid-run: the env fails with a clear error, then recovers.

Stopping dockerd kills every container (no live-restore here). While it is down, a step
raises a typed worker error and a reset a typed, actionable error; once it is back, the
next reset runs on a new container. The engine is always restored to running (as
``.ci/start-docker`` starts it). Slow and disruptive: it stops every container of the
engine, so it is marked ``slow`` (CI runs it; tests run one at a time there).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import OpenEnvError, WorkerError
from tests.conftest import require_docker
from tests.security import helpers
from tests.security.helpers import record

pytestmark = [pytest.mark.docker, pytest.mark.slow]

DOCKERD_LOG = "/tmp/openenv-gym-dockerd.log"


def _start_engine() -> None:
    """Start dockerd the way .ci/start-docker does, and wait until it answers."""
    if helpers.docker_ok():
        return
    with open(DOCKERD_LOG, "ab") as log:
        subprocess.Popen(["dockerd"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    assert helpers.wait_until(helpers.docker_ok, 60, 0.5), "dockerd did not come back"


def test_engine_restart_mid_run_fails_clearly_then_recovers() -> None:
    require_docker()
    pid = helpers.docker_engine_pid()
    if pid is None:
        pytest.skip("the engine's pid file /var/run/docker.pid is missing: not our engine to restart")
    env = gym.make("OpenEnv/Echo-v0", provider="docker", timeout=10.0)
    try:
        env.reset(seed=0)
        env.step({"message": "before"})
        os.kill(pid, signal.SIGTERM)
        assert helpers.wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 60, 0.2)
        try:
            with pytest.raises(WorkerError):
                env.step({"message": "engine down"})
            start = time.monotonic()
            with pytest.raises(OpenEnvError) as down:
                env.reset(seed=1)
            message = str(down.value)
            assert "docker" in message.lower() or "engine" in message.lower(), message
            failed_in = time.monotonic() - start
        finally:
            _start_engine()
        start = time.monotonic()
        env.reset(seed=2)
        assert env.step({"message": "after"})[0]["echo"] == "after"
        took = time.monotonic() - start
    finally:
        _start_engine()
        env.close()
    record("faults", "Docker engine stopped and restarted mid-run",
           "typed error while down; recovers once the engine is back",
           f"step: WorkerError; reset while down: {type(down.value).__name__} in {failed_in:.1f} s "
           f"({message[:80]}...); back: next episode OK after {took:.1f} s", "docker")
