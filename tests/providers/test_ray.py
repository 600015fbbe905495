"""The ray provider on a real 3-node Ray cluster (``ray.cluster_utils.Cluster`` on loopback).

Placement is checked against the node each worker really runs on; the shared behaviour tests
of every provider run here with ``provider="ray"``; a node removed mid-rollout has its
workers re-placed while the vector env carries on; nothing is left running afterwards.
One cluster serves the whole module (starting one takes several seconds).
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import InvalidRequestError, ProviderUnavailableError

pytest.importorskip("ray")

from openenv_gym.providers.ray import RayProvider  # noqa: E402


@pytest.fixture
def provider(ray_cluster) -> str:
    """The shared behaviour tests below run with this provider: ray, on the module's cluster."""
    return "ray"


def _shared(relpath: str, names: list[str]) -> None:
    # The behaviour every provider must show lives with the core tests; collecting the same
    # functions here runs them against provider="ray" (the fixture above).
    path = Path(__file__).parent.parent / relpath
    spec = importlib.util.spec_from_file_location(f"shared_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    for name in names:
        globals()[name] = getattr(module, name)


_shared("client/test_remote_env.py", [
    "test_echo_episode_through_gym_make", "test_check_env_passes_for_echo",
    "test_remote_trajectories_equal_local", "echo_env",
    "test_malformed_actions_are_typed_errors_and_session_continues",
    "test_action_outside_space_is_rejected_for_space_envs", "test_bad_env_kwargs_raise_the_envs_own_error_typed",
])
_shared("providers/test_idle_timeout.py", [
    "test_a_provider_idle_timeout_reaches_its_workers", "test_without_an_idle_timeout_a_left_session_stays",
])
_shared("client/test_worker_faults.py", [
    "test_killed_worker_raises_clearly_within_timeout_then_reset_recovers",
    "test_stuck_worker_times_out", "test_unknown_op_and_wrong_field_types_are_typed",
])


def _nodes(ray_cluster, workers: list) -> list[str]:
    return [ray_cluster.node_name(w.node_id) for w in workers]


def test_custom_resource_places_workers_only_on_nodes_that_offer_it(ray_cluster) -> None:
    provider = RayProvider(num_cpus=0.5, resources={"docker": 1})
    workers = provider.start("echo", 4)
    try:
        names = _nodes(ray_cluster, workers)
        assert set(names) <= {"node_a", "node_b"} and "head" not in names
        for w in workers:
            # On this host the worker's Unix socket is reachable; TCP works as well.
            assert w.address.startswith("unix://") and w.tcp_address.startswith("tcp://127.0.0.1:")
            for address in (w.address, w.tcp_address):
                assert BinaryClient(address, 10).request({"op": "health"})["env"] == "echo"
    finally:
        provider.stop_all(workers)


def test_zone_resource_pins_workers_to_one_node(ray_cluster) -> None:
    provider = RayProvider(num_cpus=0.25, resources={"zone_b": 0.1})
    workers = provider.start("echo", 3)
    try:
        assert _nodes(ray_cluster, workers) == ["node_b"] * 3
    finally:
        provider.stop_all(workers)


def test_strict_spread_puts_each_worker_on_its_own_node(ray_cluster) -> None:
    provider = RayProvider(num_cpus=0.5, strategy="STRICT_SPREAD")
    workers = provider.start("echo", 3)
    try:
        assert sorted(_nodes(ray_cluster, workers)) == ["head", "node_a", "node_b"]
    finally:
        provider.stop_all(workers)
    import ray

    # The pool's placement group is released with its last worker.
    groups = ray.util.placement_group_table().values()
    assert all(g["state"] == "REMOVED" for g in groups if g["name"].startswith("openenv-gym-"))


def test_pack_fills_one_node_and_node_id_pins(ray_cluster) -> None:
    provider = RayProvider(num_cpus=1, strategy="PACK")
    workers = provider.start("echo", 3)
    try:
        assert len(set(_nodes(ray_cluster, workers))) == 1
    finally:
        provider.stop_all(workers)
    pinned = RayProvider(num_cpus=0.5, node_id=ray_cluster.node_a.node_id)
    workers = pinned.start("echo", 2)
    try:
        assert _nodes(ray_cluster, workers) == ["node_a", "node_a"]
    finally:
        pinned.stop_all(workers)


def test_impossible_placement_is_a_clear_error_at_once(ray_cluster) -> None:
    start = time.monotonic()
    with pytest.raises(ProviderUnavailableError, match=r"no node of the Ray cluster.*'gpu_box'"):
        RayProvider(resources={"gpu_box": 1}).start("echo")
    with pytest.raises(ProviderUnavailableError, match="'CPU': 64"):
        RayProvider(num_cpus=64).start("echo")
    assert time.monotonic() - start < 10
    with pytest.raises(ValueError, match="unknown Ray placement strategy 'ROUND'"):
        RayProvider(strategy="round")
    with pytest.raises(ValueError, match="no live Ray node has id 'ffff'"):
        RayProvider(node_id="ffff").start("echo")
    with pytest.raises(InvalidRequestError, match="max_steps must be >= 1"):
        RayProvider(num_cpus=0.5).start("echo", 2, {"max_steps": 0})


def test_stop_ends_actor_and_server_processes(ray_cluster, procs) -> None:
    provider = RayProvider(num_cpus=0.5)
    workers = provider.start("echo", 3)
    pids = {w.pid for w in workers} | {w.actor_pid for w in workers}
    folders = {os.path.dirname(w.address[len("unix://"):]) for w in workers}
    assert procs.running(pids) == pids and len(pids) == 6 and all(map(os.path.isdir, folders))
    provider.stop_all(workers)
    assert not procs.wait_gone({w.pid for w in workers}, 10), "env servers still running after stop"
    assert all(not w.alive() for w in workers)
    assert not any(map(os.path.exists, folders)), "socket folders left behind"


def _cgroup_folders(pid: int) -> list[str]:
    """The cgroup folders of ours that process ``pid`` is in (v1: one per controller)."""
    from openenv_gym.providers import _cgroup

    with open(f"/proc/{pid}/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f]
    return [os.path.join("/sys/fs/cgroup", controllers, path.lstrip("/")) for _, controllers, path in lines
            if controllers in ("pids", "memory") and os.path.basename(path).startswith(_cgroup.PREFIX)]


def test_an_untrusted_envs_server_gets_a_cgroup_and_tmpfs_that_stop_and_actor_loss_remove(ray_cluster, procs) -> None:
    from openenv_gym.providers import _cgroup, _tmpfs

    if not _cgroup.support()[0]:
        pytest.skip(f"no cgroups for workers here: {_cgroup.support()[1]}")
    import ray

    # The hardening overrides of a container set the process isolation's limits too.
    provider = RayProvider(num_cpus=0.25, docker_options={"container_options": {"pids_limit": 96}})
    stopped, killed = provider.start("coding", 2)
    try:
        groups = {w.pid: _cgroup_folders(w.pid) for w in (stopped, killed)}
        assert all(len(folders) == 2 for folders in groups.values()), groups  # pids and memory
        with open(os.path.join(groups[stopped.pid][0], "pids.max")) as f:
            assert f.read().strip() == "96"
        if _tmpfs.support()[0]:  # and its sandboxes in a private tmpfs, as on the process provider
            with open(f"/proc/{stopped.pid}/mountinfo") as f:
                tmpfs = [m for m in f.read().splitlines() if " - tmpfs " in m and "size=65536k" in m]
            assert len(tmpfs) == 1 and "/openenv-ray-" in tmpfs[0], tmpfs
        provider.stop_all([stopped])
        assert not any(map(os.path.exists, groups[stopped.pid]))
        socket_folder = os.path.dirname(killed.address[len("unix://"):])
        assert os.path.isdir(socket_folder)
        ray.kill(killed.actor, no_restart=True)  # Ray ends the server with its actor
        assert not procs.wait_gone({killed.pid}, 15), "the server outlived its actor"
        [fresh] = provider.start("coding")  # the next server on the node removes what is left
        provider.stop_all([fresh])
        assert not any(map(os.path.exists, groups[killed.pid]))
        assert not os.path.exists(socket_folder)  # its socket folder too
    finally:
        provider.stop_all([stopped, killed])


def test_a_socket_path_too_long_for_the_kernel_falls_back_to_tcp(ray_cluster, tmp_path) -> None:
    deep = tmp_path / ("d" * 100)
    deep.mkdir()
    provider = RayProvider(num_cpus=0.25, runtime_env={"env_vars": {"TMPDIR": str(deep)}})
    [worker] = provider.start("echo")
    try:
        assert worker.address == worker.tcp_address and worker.address.startswith("tcp://")
        assert BinaryClient(worker.address, 10).request({"op": "health"})["env"] == "echo"
    finally:
        provider.stop_all([worker])


def test_vector_env_on_this_host_uses_shared_memory_and_matches_tcp(ray_cluster) -> None:
    def rollout(local_sockets: bool) -> tuple[list[bool], list[np.ndarray]]:
        envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider="ray",
                            envs_per_worker=2,
                            provider_options={"num_cpus": 0.25, "local_sockets": local_sockets})
        try:
            shared = [piece.shared for piece in envs.pool.slices]
            obs, _ = envs.reset(seed=3)
            seen = [obs]
            for t in range(40):
                seen.append(envs.step(np.array([t % 2, 1, 0, t % 3 == 0]))[0])
            return shared, seen
        finally:
            envs.close()

    shared, by_socket = rollout(local_sockets=True)
    inline, by_tcp = rollout(local_sockets=False)
    assert shared == [True, True] and inline == [False, False]
    np.testing.assert_array_equal(np.stack(by_socket), np.stack(by_tcp))


def test_node_lost_mid_rollout_replaces_its_workers_and_the_rollout_continues(ray_cluster, procs) -> None:
    """Drives the rollout through the vector env (gym.make_vec), which restarts failed workers."""
    extra = ray_cluster.cluster.add_node(num_cpus=4, resources={"docker": 4})
    ray_cluster.extra.append(extra)
    ray_cluster.cluster.wait_for_nodes()
    import ray

    # SPREAD is best effort, and the scheduler may see the new node's resources late: twice
    # all six workers went to node_a and node_b. Holding half of each one's docker slots
    # while the workers are placed leaves them room for four, so at least two must wait for
    # the new node; let go before it is removed, the slots take the replacements.
    @ray.remote(num_cpus=0)
    class Hold:  # defined here, Ray ships it by value: workers cannot import this test module
        def ready(self) -> bool:
            return True

    holders = [Hold.options(resources={"docker": 2, zone: 1}).remote() for zone in ("zone_a", "zone_b")]
    try:
        ray.get([h.ready.remote() for h in holders], timeout=60)
        # One env per worker: six workers spread over three nodes (the default, one worker
        # per core, would make two, which need not land on the node this test removes).
        envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=6, env_id="CartPole-v1", provider="ray",
                            envs_per_worker=1, step_timeout=20.0,
                            provider_options={"num_cpus": 0.5, "resources": {"docker": 1}})
    finally:
        for h in holders:
            ray.kill(h)
    try:
        pool = envs.unwrapped._pool if hasattr(envs.unwrapped, "_pool") else envs._pool
        workers = pool.workers
        placed = _nodes(ray_cluster, workers)
        doomed = {i for i, name in enumerate(placed) if name == "extra0"}
        assert doomed and set(placed) <= {"node_a", "node_b", "extra0"}, placed
        doomed_pids = {workers[i].pid for i in doomed}

        envs.action_space.seed(0)
        envs.reset(seed=0)
        for _ in range(5):
            envs.step(envs.action_space.sample())
        ray_cluster.cluster.remove_node(extra)

        # Each lost worker's envs are flagged once, at the step where its loss shows
        # (the servers on the lost node exit within moments of each other).
        expected = sorted(i for w in doomed for i in pool.groups[w])
        flagged: list[int] = []
        deadline = time.monotonic() + 60
        while sorted(flagged) != expected and time.monotonic() < deadline:
            obs, rewards, terms, truncs, infos = envs.step(envs.action_space.sample())
            if "_worker_restarted" in infos:
                now = [int(i) for i in np.flatnonzero(infos["_worker_restarted"])]
                assert all(truncs[i] for i in now) and not set(now) & set(flagged)
                assert "worker" in str(infos["worker_error"][now[0]])
                flagged += now
        assert sorted(flagged) == expected
        assert not procs.wait_gone(doomed_pids, 5)

        # Re-placed on surviving nodes; the other workers were left alone.
        after = _nodes(ray_cluster, pool.workers)
        assert all(after[i] in {"node_a", "node_b"} for i in doomed)
        assert [w.restarts for w in pool.workers] == [int(i in doomed) for i in range(len(workers))]
        for _ in range(30):
            obs, rewards, terms, truncs, infos = envs.step(envs.action_space.sample())
            assert "_worker_restarted" not in infos
            assert envs.observation_space.contains(obs)
    finally:
        envs.close()
        if extra in ray_cluster.cluster.worker_nodes:  # failed before removing it: later tests expect it gone
            ray_cluster.cluster.remove_node(extra)
    assert not procs.wait_gone({w.pid for w in pool.workers}, 10)


def test_strict_group_that_cannot_be_replaced_falls_back_to_free_placement(ray_cluster, procs) -> None:
    extra = ray_cluster.cluster.add_node(num_cpus=4, resources={"docker": 4})
    ray_cluster.extra.append(extra)
    ray_cluster.cluster.wait_for_nodes()
    provider = RayProvider(num_cpus=0.5, resources={"docker": 1}, strategy="STRICT_SPREAD",
                           regroup_timeout=2.0)
    workers = provider.start("echo", 3)
    try:
        name = ray_cluster.node_name(extra.node_id)
        assert sorted(_nodes(ray_cluster, workers)) == sorted(["node_a", "node_b", name])
        [victim] = [w for w in workers if w.node_id == extra.node_id]
        others = [(w.address, w.pid) for w in workers if w is not victim]
        ray_cluster.cluster.remove_node(extra)
        assert not victim.alive()
        # Only two docker nodes remain for three strictly spread bundles: Ray cannot re-place
        # the group, so the worker is placed outside it rather than staying down.
        victim.restart()
        assert _nodes(ray_cluster, [victim])[0] in {"node_a", "node_b"}
        assert BinaryClient(victim.address, 10).request({"op": "health"})["env"] == "echo"
        assert [(w.address, w.pid) for w in workers if w is not victim] == others
        assert all(w.alive() for w in workers)
    finally:
        provider.stop_all(workers)
    assert not procs.wait_gone({w.pid for w in workers}, 10)


def _require_docker() -> None:
    # One gate for every Docker test: the root conftest's (skip, or fail under CI's flag).
    path = Path(__file__).parent.parent / "conftest.py"
    spec = importlib.util.spec_from_file_location("root_conftest_gate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.require_docker()


@pytest.mark.docker
def test_actor_starts_a_hardened_container_on_a_docker_node(ray_cluster) -> None:
    _require_docker()
    import docker

    engine = docker.from_env()
    provider = RayProvider(num_cpus=0.5, resources={"docker": 1}, isolation="docker")
    workers = provider.start("echo", 2)
    try:
        assert set(_nodes(ray_cluster, workers)) <= {"node_a", "node_b"}
        for w in workers:
            attrs = engine.containers.get(w.container_id).attrs
            assert attrs["HostConfig"]["NetworkMode"] == "none" and attrs["HostConfig"]["ReadonlyRootfs"]
            # The trainer reaches the container through its socket on this host, and from
            # elsewhere through the actor's TCP relay.
            assert w.address.startswith("unix://") and w.tcp_address.startswith("tcp://")
            for address in (w.address, w.tcp_address):
                client = BinaryClient(address, 10)
                sid = client.request({"op": "reset", "seed": 0})["sid"]
                assert client.request({"op": "step", "sid": sid, "action": {"message": "hi"}})["obs"]["echo"] == "hi"
                client.drop()
        victim = workers[0]
        old = victim.container_id
        engine.containers.get(old).kill()
        assert not victim.alive()
        victim.restart()
        assert victim.container_id != old and victim.alive()
        assert BinaryClient(victim.address, 10).request({"op": "health"})["env"] == "echo"
        ids = [w.container_id for w in workers]
    finally:
        provider.stop_all(workers)
    for cid in ids:
        with pytest.raises(docker.errors.NotFound):
            engine.containers.get(cid)


_CLIENT_TRAINER = """
import sys
import gymnasium as gym, numpy as np, ray
import openenv_gym

ray.init(f"ray://127.0.0.1:{sys.argv[1]}", log_to_driver=False)
assert ray.util.client.ray.is_connected()
env = gym.make("OpenEnv/Echo-v0", provider="ray")
env.reset(seed=0)
print("echo", env.step({"message": "hi"})[0]["echo"], flush=True)
print("pids", env.unwrapped.worker.pid, env.unwrapped.worker.actor_pid, flush=True)
env.close()
vec = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider="ray",
                   provider_options={"num_cpus": 0.25})
local = gym.make_vec("CartPole-v1", num_envs=4, vectorization_mode="sync")
obs, _ = vec.reset(seed=3)
expected, _ = local.reset(seed=3)
same = np.array_equal(obs, expected)
for t in range(60):
    actions = np.array([(t + i) % 2 for i in range(4)])
    obs, _, _, _, _ = vec.step(actions)
    expected, _, _, _, _ = local.step(actions)
    same = same and np.array_equal(obs, expected)
print("vector", same, sorted({w.address.split("://")[0] for w in vec.unwrapped.workers}), flush=True)
print("pids", *[p for w in vec.unwrapped.workers for p in (w.pid, w.actor_pid)], flush=True)
vec.close()
ray.shutdown()
"""


def test_a_trainer_connected_through_ray_client_gets_workers(ray_cluster, procs) -> None:
    # Ray Client (ray://) is how a laptop drives a remote cluster: the driver is not a node.
    # Its workers are placed as any others, and reached here through their Unix sockets,
    # since they run on this host.
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", _CLIENT_TRAINER, str(ray_cluster.client_port)],
                         capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "echo hi" in out.stdout and "vector True ['unix']" in out.stdout, out.stdout + out.stderr[-2000:]
    pids = {int(p) for line in out.stdout.splitlines() if line.startswith("pids ") for p in line.split()[1:]}
    assert len(pids) == 6, out.stdout  # Echo's server and actor, the vector env's two of each
    assert not procs.wait_gone(pids, 30), "the client's workers outlived it"


def test_a_server_that_does_not_start_in_time_is_a_worker_error(ray_cluster) -> None:
    # The actor's WorkerError comes back wrapped in a RayTaskError; the provider must raise
    # its own WorkerError with the actor's message (it raised TypeError: "'WorkerError'
    # object is not callable", a local name shadowing the cause() helper).
    from openenv_gym.errors import WorkerError

    provider = RayProvider(num_cpus=0.25, startup_timeout=0.001)
    with pytest.raises(WorkerError, match=r"failed to start on Ray: env server for 'echo' did not start"):
        provider.start("echo", 1)
