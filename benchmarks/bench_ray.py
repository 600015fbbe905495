"""The ray provider beside the process provider, in one run on this machine.

Starts a 3-node Ray cluster on loopback (``ray.cluster_utils.Cluster``: head + 2 nodes, each
with logical CPUs; the machine's real cores are shared by all of them) and measures:

  * Echo step round trip through ``RemoteEnv`` (median, p99): ray (an actor-hosted server,
    reached through its Unix socket since every node is on this host) vs process (Unix
    socket), and ray with ``local_sockets=False`` (TCP, as for a worker on another host);
    with ``--docker``, also ray with ``isolation="docker"`` (container on the node);
  * CartPole vector throughput, ``gym.make_vec("OpenEnv/Gym-v0", num_envs=8)`` with
    ``envs_per_worker`` 1 and 4, random actions, env-steps/s: ray (SPREAD over 3 nodes),
    ray over TCP (inline slices) and process; rounds alternate between the three and the
    median round is reported;
  * time to place 16 Echo workers (ray) vs to start 16 (process);
  * time to re-place the workers of a removed node.

Run::

    python benchmarks/bench_ray.py            # add --docker when an engine runs

Figures on a shared 2-core machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import gymnasium as gym  # noqa: E402
import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import openenv_gym  # noqa: E402,F401  (registers the ids)
from openenv_gym.providers.process import ProcessProvider  # noqa: E402
from openenv_gym.providers.ray import RayProvider  # noqa: E402

from _results import require_docker  # noqa: E402  (benchmarks/_results.py)

RAY_OPTIONS = {"num_cpus": 0.25}
TCP = {"local_sockets": False}  # as for workers on another host


def echo_latency(provider: str, options: dict[str, Any], n: int) -> dict[str, float]:
    env = gym.make("OpenEnv/Echo-v0", provider=provider, provider_options=options, max_steps=10**6)
    try:
        env.reset(seed=0)
        action = {"message": "hello world"}
        for _ in range(100):
            env.step(action)
        lat = []
        for _ in range(n):
            t0 = time.perf_counter()
            env.step(action)
            lat.append(1e3 * (time.perf_counter() - t0))
    finally:
        env.close()
    lat.sort()
    return {"median_ms": statistics.median(lat), "p99_ms": lat[int(0.99 * (len(lat) - 1))]}


def vector_throughput(provider: str, options: dict[str, Any], envs_per_worker: int,
                      steps: int) -> float:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=8, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=envs_per_worker, provider_options=options)
    try:
        envs.action_space.seed(0)
        envs.reset(seed=0)
        actions = [envs.action_space.sample() for _ in range(64)]
        for i in range(50):
            envs.step(actions[i % 64])
        t0 = time.perf_counter()
        for i in range(steps):
            envs.step(actions[i % 64])
        return 8 * steps / (time.perf_counter() - t0)
    finally:
        envs.close()


def place(provider: Any, n: int) -> tuple[float, list[Any]]:
    t0 = time.perf_counter()
    workers = provider.start("echo", n)
    return time.perf_counter() - t0, workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="Echo steps timed per provider")
    parser.add_argument("--vector-steps", type=int, default=500, help="vector steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--docker", action="store_true", help="also time ray + docker isolation")
    args = parser.parse_args()
    if args.docker:  # the nodes are on this host: its engine serves their containers
        require_docker("bench_ray.py --docker", instead="leave out --docker")

    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 8, "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=8, resources={"docker": 8}) for _ in range(2)]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    print(f"3-node cluster up in {time.perf_counter() - t0:.1f} s")
    try:
        rows: list[tuple[str, float, float, float | None, str]] = []
        process = echo_latency("process", {}, args.steps)
        ray_lat = echo_latency("ray", RAY_OPTIONS, args.steps)
        ray_tcp = echo_latency("ray", {**RAY_OPTIONS, **TCP}, args.steps)
        rows.append(("Echo step, median", process["median_ms"], ray_lat["median_ms"],
                     ray_tcp["median_ms"], "ms"))
        rows.append(("Echo step, p99", process["p99_ms"], ray_lat["p99_ms"], ray_tcp["p99_ms"], "ms"))
        if args.docker:
            dock = [echo_latency("ray", {**RAY_OPTIONS, **extra, "isolation": "docker",
                                         "resources": {"docker": 1}}, args.steps)
                    for extra in ({}, TCP)]
            rows.append(("Echo step, median (ray + docker isolation; TCP: through the actor's relay)",
                         process["median_ms"], dock[0]["median_ms"], dock[1]["median_ms"], "ms"))

        for k in (1, 4):
            runs: dict[str, list[float]] = {"process": [], "ray": [], "ray tcp": []}
            for _ in range(args.rounds):
                runs["process"].append(vector_throughput("process", {}, k, args.vector_steps))
                runs["ray"].append(vector_throughput("ray", {**RAY_OPTIONS, "strategy": "SPREAD"},
                                                     k, args.vector_steps))
                runs["ray tcp"].append(vector_throughput(
                    "ray", {**RAY_OPTIONS, **TCP, "strategy": "SPREAD"}, k, args.vector_steps))
            rows.append((f"CartPole num_envs=8, envs_per_worker={k}",
                         statistics.median(runs["process"]), statistics.median(runs["ray"]),
                         statistics.median(runs["ray tcp"]), "env-steps/s"))

        proc_provider = ProcessProvider()
        proc_s, proc_workers = place(proc_provider, 16)
        proc_provider.stop_all(proc_workers)
        ray_provider = RayProvider(**RAY_OPTIONS, strategy="SPREAD")
        ray_s, workers = place(ray_provider, 16)
        rows.append(("start 16 Echo workers", proc_s, ray_s, None, "s"))

        lost = [w for w in workers if w.node_id == nodes[0].node_id]
        cluster.remove_node(nodes[0])
        t1 = time.perf_counter()
        for w in lost:
            assert not w.alive()
        with ThreadPoolExecutor(len(lost) or 1) as ex:
            list(ex.map(lambda w: w.restart(), lost))
        replace_s = time.perf_counter() - t1
        ray_provider.stop_all(workers)

        print()
        print("| measure | process | ray | ray / process | ray over TCP | TCP / process |")
        print("|---|---|---|---|---|---|")
        for name, p, r, t, unit in rows:
            tcp = f"{t:.3g} | {t / p:.2f}x" if t is not None else "| "
            print(f"| {name} ({unit}) | {p:.3g} | {r:.3g} | {r / p:.2f}x | {tcp} |")
        print(f"\nnode removed with {len(lost)} of 16 workers on it: detected and all re-placed "
              f"on the surviving nodes in {replace_s:.2f} s")
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
