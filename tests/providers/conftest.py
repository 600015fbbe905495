"""A real multi-node Ray cluster on loopback, shared by the tests of one module.

Three nodes, each with its own custom resources, so placement can be checked:

- head: 4 CPUs, ``{"head": 1}`` (the driver connects here; it is never removed)
- node_a: 4 CPUs, ``{"docker": 4, "zone_a": 1}``
- node_b: 4 CPUs, ``{"docker": 4, "zone_b": 1}``

CPU counts are logical: Ray schedules by them, the machine's real cores are shared.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import pytest

from tests.security.helpers import descendants

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@dataclass
class RayTestCluster:
    """The running cluster and its nodes (``ray._private.node.Node`` objects)."""

    cluster: Any
    head: Any
    node_a: Any
    node_b: Any
    extra: list[Any] = field(default_factory=list)
    #: Port of the head's Ray Client server (``ray://127.0.0.1:PORT``).
    client_port: int = 0

    def node_name(self, node_id: str) -> str:
        """``"head"``, ``"node_a"``, ``"node_b"`` or ``"extraN"`` for a Ray node id."""
        for name in ("head", "node_a", "node_b"):
            if getattr(self, name).node_id == node_id:
                return name
        for i, node in enumerate(self.extra):
            if node.node_id == node_id:
                return f"extra{i}"
        return f"unknown:{node_id[:8]}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def running(pids: set[int]) -> set[int]:
    """The pids of ``pids`` that still run (zombies count as gone)."""
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] != b"Z":
                    alive.add(pid)
        except OSError:
            pass
    return alive


def wait_gone(pids: set[int], timeout: float = 15.0) -> set[int]:
    """Wait until none of ``pids`` runs; returns those still running at the deadline."""
    deadline = time.monotonic() + timeout
    while running(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return running(pids)


def name(pid: int) -> str:
    """The program name of ``pid`` (``/proc/<pid>/comm``: ``"raylet"``), "" once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def ray_cores(pids: set[int]) -> set[int]:
    """The pids of ``pids`` that are a local Ray's GCS or raylet."""
    return {pid for pid in pids if name(pid) in ("gcs_server", "raylet")}


class Procs:
    """Process checks for tests (the ``procs`` fixture)."""

    descendants = staticmethod(descendants)
    running = staticmethod(running)
    wait_gone = staticmethod(wait_gone)
    name = staticmethod(name)
    ray_cores = staticmethod(ray_cores)


@pytest.fixture(scope="session")
def procs() -> type[Procs]:
    """Helpers to find and wait for processes by pid (/proc)."""
    return Procs


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayTestCluster]:
    """Start the 3-node cluster, connect this process to it, tear everything down after."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    before = descendants(os.getpid())
    client_port = _free_port()
    # gRPC >= 1.81 restarts its epoll poller in a forked child that has closed the poller's
    # fd (grpc/grpc#43055): the Ray Client proxy forks, with a preexec_fn, the per-client
    # server, which then dies before exec now and then (3 connects in 40 on a busy machine
    # here; none in 85 with fork support off). The cluster's processes inherit this.
    env = pytest.MonkeyPatch()
    env.setenv("GRPC_ENABLE_FORK_SUPPORT", "false")
    cluster = Cluster(initialize_head=True, shutdown_at_exit=True,
                      head_node_args={"num_cpus": 4, "resources": {"head": 1},
                                      "include_dashboard": False, "ray_client_server_port": client_port})
    try:
        node_a = cluster.add_node(num_cpus=4, resources={"docker": 4, "zone_a": 1})
        node_b = cluster.add_node(num_cpus=4, resources={"docker": 4, "zone_b": 1})
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        yield RayTestCluster(cluster, cluster.head_node, node_a, node_b, client_port=client_port)
    finally:
        ray.shutdown()
        cluster.shutdown()
        env.undo()
    leftover = wait_gone(descendants(os.getpid()) - before)
    assert not leftover, f"processes left after the cluster shut down: {sorted(leftover)}"
