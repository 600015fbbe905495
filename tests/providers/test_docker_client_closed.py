"""A closed Docker env holds no connection to the Docker daemon, even while its worker
objects are still referenced (``workers = list(envs.workers)``, as tests and callbacks do).

Every worker holds its provider's ``docker`` client, and nothing closed that client's
connection pool: after a few worker restarts, a closed vector env whose workers were still
referenced kept ~20 sockets to the daemon open until garbage collection."""

from __future__ import annotations

import gc
import os

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.conftest import require_docker
from tests.vector.vector_helpers import kill_worker

pytestmark = pytest.mark.docker


def _open_sockets() -> int:
    """How many sockets this process holds open."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
    return count


def test_closed_docker_env_keeps_no_daemon_connection_while_its_workers_are_referenced() -> None:
    require_docker()
    gc.collect()
    before = _open_sockets()
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="docker", envs_per_worker=1,
                        on_worker_error="restart")
    try:
        envs.reset(seed=0)
        workers = list(envs.unwrapped.workers)  # referenced past close(), as a caller may
        kill_worker(workers[0])
        info = envs.step({"message": np.array(["a", "b"])})[4]
        assert info["worker_restarted"][0]
    finally:
        envs.close()
    gc.collect()
    assert _open_sockets() <= before, "the closed env's Docker client kept its connections"
    assert not any(w.alive() for w in workers)
