"""A pool larger than the cluster can host fails after ``placement_timeout``, once: the starts
not begun when the first worker failed are not attempted (each waited a placement_timeout of
its own, 16 at a time: a 40-worker pool on a 3-CPU cluster waited 3 x 120 s, not 120 s).

Runs without the shared cluster: a local Ray with one CPU.
"""

from __future__ import annotations

import pytest

from openenv_gym.errors import WorkerError

ray = pytest.importorskip("ray")

from openenv_gym.providers.ray import RayProvider  # noqa: E402


def _server_hosts() -> int:
    return sum(1 for a in ray._private.state.actors().values() if a.get("ActorClassName") == "ServerHost")


def test_a_pool_the_cluster_cannot_host_stops_placing_after_the_first_failure() -> None:
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        provider = RayProvider(num_cpus=1, placement_timeout=3)
        with pytest.raises(WorkerError, match=r"within 3 s: the pool's 20 workers ask for "
                           r"20 CPU in all \(1 CPU each\), and the cluster has 1 CPU in all") as exc:
            provider.start("echo", 20)
        # What fits, and how to fix it.
        assert "room for 1 such worker." in str(exc.value)
        assert "fewer workers" in str(exc.value) and "num_cpus=" in str(exc.value)
        assert "add nodes" in str(exc.value)
        # 16 start at once and one fits (its thread then takes the 17th); the rest were
        # tried only after the first 3-s timeouts, each waiting 3 s more, until the fix.
        assert 0 < _server_hosts() < 20
        # Nothing is left holding the CPU.
        [worker] = provider.start("echo", 1)
        provider.stop_all([worker])
        # A placement group (PACK) that cannot be reserved says the same.
        packed = RayProvider(num_cpus=1, placement_timeout=3, strategy="PACK")
        with pytest.raises(WorkerError, match=r"reserve 3 x .*the pool's 3 workers ask for 3 CPU "
                           r"in all \(1 CPU each\), and the cluster has 1 CPU in all"):
            packed.start("echo", 3)
    finally:
        ray.shutdown()
