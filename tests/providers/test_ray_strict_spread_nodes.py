"""A STRICT_SPREAD pool with more workers than the cluster has nodes says it needs a node per
worker, not that it is short of CPUs: on an idle 1-node cluster with CPUs to spare, the
message blamed "other work" holding them.

Runs without the shared cluster: a local Ray with one node.
"""

from __future__ import annotations

import pytest

from openenv_gym.errors import WorkerError

ray = pytest.importorskip("ray")

from openenv_gym.providers.ray import RayProvider  # noqa: E402


def test_strict_spread_with_more_workers_than_nodes_names_the_nodes_it_needs() -> None:
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        provider = RayProvider(num_cpus=1, placement_timeout=3, strategy="STRICT_SPREAD")
        with pytest.raises(WorkerError) as exc:
            provider.start("echo", 2)
        message = str(exc.value)
        assert "the pool's 2 workers need 2 nodes, and the cluster has 1 node that can host one" in message
        # What to do: fewer workers, a softer strategy, or more nodes.
        assert "at most 1 worker," in message and "SPREAD" in message and "add nodes" in message
        assert "other work" not in message and "num_cpus=" not in message
        # The group was given back: the CPUs are free for a pool that fits.
        [worker] = provider.start("echo", 1)
        provider.stop_all([worker])
    finally:
        ray.shutdown()
