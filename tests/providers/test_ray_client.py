"""The ray provider driven through Ray Client (``ray.init("ray://host:port")``).

That is how a laptop drives a remote cluster: the trainer is no Ray node, every Ray call
goes through the cluster's client server. A real one-node cluster on loopback with its
client server; the trainer reaches workers over TCP (``local_sockets=False``, as from
another host) and, by default, through their sockets on this host.
"""

from __future__ import annotations

import os
import signal
import socket
from typing import Any, Iterator

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.providers.conftest import Procs, descendants, wait_gone

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def client_cluster() -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    # A plain ray.init earlier in this process (the other ray tests) leaves
    # RAY_CLIENT_MODE=0 in os.environ; inherited by this cluster, it makes the client
    # server's per-client server exit at start ("SpecificServer startup failed").
    os.environ.pop("RAY_CLIENT_MODE", None)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    before = descendants(os.getpid())
    cluster = Cluster(initialize_head=True, shutdown_at_exit=True,
                      head_node_args={"num_cpus": 4, "include_dashboard": False,
                                      "ray_client_server_port": port})
    cluster.client_address = f"ray://127.0.0.1:{port}"
    try:
        ray.init(cluster.client_address, logging_level="warning")
        assert ray.util.client.ray.is_connected(), "not in client mode"
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
    leftover = wait_gone(descendants(os.getpid()) - before)
    assert not leftover, f"processes left after the cluster shut down: {sorted(leftover)}"


@pytest.mark.parametrize("local_sockets", [False, True], ids=["tcp", "socket"])
def test_an_env_steps_and_its_processes_end_with_it(client_cluster, local_sockets: bool) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"num_cpus": 0.5,
                                                                       "local_sockets": local_sockets})
    try:
        worker = env.unwrapped._worker
        assert worker.address.startswith("unix://" if local_sockets else "tcp://127.0.0.1:")
        obs, info = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step({"message": "through ray client"})
        assert obs["echo"] == "through ray client" and reward == pytest.approx(1.8)
        pids = {worker.pid, worker.actor_pid}
        assert Procs.running(pids) == pids and len(pids) == 2
    finally:
        env.close()
    assert not wait_gone(pids, 15), "the actor or its env server outlived env.close()"


def test_a_killed_worker_is_replaced_through_ray_client(client_cluster) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"num_cpus": 0.5, "local_sockets": False})
    try:
        env.reset()
        worker = env.unwrapped._worker
        old = worker.pid
        os.kill(old, signal.SIGKILL)
        with pytest.raises(openenv_gym.WorkerError):
            env.step({"message": "lost"})
        env.reset()  # replaces the worker (a fresh actor and server)
        assert env.step({"message": "back"})[0]["echo"] == "back"
        assert worker.pid != old and worker.restarts == 1
    finally:
        env.close()


def test_a_vector_env_matches_gymnasium_sync(client_cluster) -> None:
    actions = np.random.default_rng(0).integers(0, 2, (60, 4))
    ours = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider="ray",
                        envs_per_worker=2, provider_options={"num_cpus": 0.25, "local_sockets": False})
    sync = gym.make_vec("CartPole-v1", num_envs=4, vectorization_mode="sync")
    try:
        got, want = [ours.reset(seed=7)[0]], [sync.reset(seed=7)[0]]
        for a in actions:
            got.append(ours.step(a)[0])
            want.append(sync.step(a)[0])
        np.testing.assert_array_equal(np.stack(got), np.stack(want))
    finally:
        ours.close()
        sync.close()


def test_the_provider_connects_by_ray_address_and_disconnects_after(client_cluster) -> None:
    """``address="ray://..."``: the provider connects itself, and lets go with its last worker."""
    ray.shutdown()
    try:
        env = gym.make("OpenEnv/Echo-v0", provider="ray",
                       provider_options={"address": client_cluster.client_address, "num_cpus": 0.5})
        try:
            assert ray.util.client.ray.is_connected()
            env.reset()
            assert env.step({"message": "hi"})[0]["echo"] == "hi"
        finally:
            env.close()
        assert not ray.is_initialized(), "the provider's own connection outlived its last worker"
    finally:
        if not ray.is_initialized():
            ray.init(client_cluster.client_address, logging_level="warning")
