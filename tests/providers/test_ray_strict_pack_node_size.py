"""A STRICT_PACK pool larger than any one node of a multi-node cluster says that no node has
the CPUs of all its workers, not that other work holds them: on an idle cluster of two
1-CPU nodes, a 2-worker pool was told the cluster had 2 CPU free and "other work holds the
rest", and to add nodes (which never helps a pool that must fit on one node).

Runs its own small cluster: two 1-CPU nodes (``ray.cluster_utils.Cluster``) on loopback.
"""

from __future__ import annotations

import os

import pytest

from openenv_gym.errors import WorkerError

ray = pytest.importorskip("ray")

from openenv_gym.providers.ray import RayProvider  # noqa: E402


def test_strict_pack_larger_than_any_node_names_the_node_size_it_needs(procs) -> None:
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    before = procs.descendants(os.getpid())
    cluster = Cluster(initialize_head=True, shutdown_at_exit=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        provider = RayProvider(num_cpus=1, placement_timeout=3, strategy="STRICT_PACK")
        with pytest.raises(WorkerError) as exc:
            provider.start("echo", 2)
        message = str(exc.value)
        assert ("the pool's 2 workers need 2 CPU on one node (1 CPU each), and no node has "
                "that: the largest has 1 CPU, room for 1 worker.") in message
        # What to do: fewer workers, a softer strategy (which fits here), or a bigger node.
        assert "at most 1 worker," in message and "PACK or SPREAD" in message
        assert "a node with 2 CPU" in message
        assert "other work" not in message and "add nodes" not in message
        # The advice holds: PACK places the same pool over the two nodes.
        packed = RayProvider(num_cpus=1, placement_timeout=60, strategy="PACK")
        packed.stop_all(packed.start("echo", 2))
    finally:
        ray.shutdown()
        cluster.shutdown()
    leftover = procs.wait_gone(procs.descendants(os.getpid()) - before)
    assert not leftover, f"processes left after the cluster shut down: {sorted(leftover)}"
