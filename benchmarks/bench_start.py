"""Worker start: forked from the fork server vs spawned as a fresh interpreter.

Each figure is the time from asking the process provider for workers to the first reset
answered by each (``provider.start`` + one ``reset`` per worker), median over interleaved
rounds so the machine's load hits both ways alike:

- one worker of Echo, Coding, Atari (Pong) and Gym-v0 (CartPole), with the fork server
  already running (the trainer's second and later workers, and every replacement);
- the first worker of a trainer, fork server included (it is started on first use);
- eight CartPole workers at once (``gym.make_vec(..., num_envs=8, envs_per_worker=1)``'s start);
- ``gym.make_vec("OpenEnv/Coding-v0", 16)`` to its first reset answered, trainer side included
  (many sandboxes: a Coding env per worker).

It also reports the memory each worker really costs (its PSS: shared pages divided among
the processes that share them) with eight workers running, since forked workers share the
fork server's imported code until they write to it.

Run: ``python benchmarks/bench_start.py [--rounds 5] [--write]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Callable

import openenv_gym  # noqa: F401  (registers the OpenEnv/* ids)

from openenv_gym.client.transport import BinaryClient
from openenv_gym.providers import _forks
from openenv_gym.providers.process import ProcessProvider

from _results import write_section  # benchmarks/_results.py

CASES: list[tuple[str, str, dict[str, Any], int]] = [
    ("Echo, 1 worker", "echo", {}, 1),
    ("Coding, 1 worker", "coding", {}, 1),
    ("Atari (Pong), 1 worker", "atari", {"game": "pong"}, 1),
    ("Gym-v0 CartPole, 1 worker", "gym", {"env_id": "CartPole-v1"}, 1),
    ("Gym-v0 CartPole, 8 workers at once", "gym", {"env_id": "CartPole-v1"}, 8),
]


def started(provider: ProcessProvider, env: str, kwargs: dict[str, Any], n: int,
            measure: Callable[[list[Any]], float]) -> tuple[float, float]:
    """Start ``n`` workers, have each answer a reset, then stop them.

    Returns:
        Seconds from ``provider.start`` to the last reset answered, and ``measure(workers)``
        taken while they all run.
    """
    t0 = time.perf_counter()
    workers = provider.start(env, n, kwargs)
    try:
        for worker in workers:
            client = BinaryClient(worker.address, timeout=60)
            client.request({"op": "reset", "seed": 0})
            client.close()
        return time.perf_counter() - t0, measure(workers)
    finally:
        provider.stop_all(workers)


def start_and_reset(provider: ProcessProvider, env: str, kwargs: dict[str, Any], n: int) -> float:
    """Seconds from ``provider.start`` to a reset answered by every worker."""
    return started(provider, env, kwargs, n, lambda _: 0.0)[0]


def make_vec_and_reset(fork: bool, env_id: str = "OpenEnv/Coding-v0", n: int = 16) -> float:
    """Seconds from ``gym.make_vec`` to its first reset answered, workers forked or spawned."""
    import gymnasium as gym

    t0 = time.perf_counter()
    envs = gym.make_vec(env_id, n, provider="process", provider_options={"fork": fork})
    try:
        envs.reset(seed=0)
        return time.perf_counter() - t0
    finally:
        envs.close()


def pss_mib(pid: int) -> float:
    """Proportional set size of ``pid`` in MiB."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Pss:")) / 1024


def memory_per_worker(provider: ProcessProvider, env: str, kwargs: dict[str, Any], n: int = 8) -> float:
    """Mean PSS (MiB) of ``n`` running workers after one reset each."""
    return started(provider, env, kwargs, n, lambda workers: statistics.mean(pss_mib(w.pid) for w in workers))[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    ways = {"forked": ProcessProvider(fork=True), "spawned": ProcessProvider(fork=False)}
    times: dict[tuple[str, str], list[float]] = {}
    start_and_reset(ways["forked"], "echo", {}, 1)  # the fork server is up before round 1 too
    for _ in range(args.rounds):
        for label, env, kwargs, n in CASES:
            for way, provider in ways.items():
                times.setdefault((label, way), []).append(start_and_reset(provider, env, kwargs, n))
        for way in ways:
            times.setdefault(("Coding, `gym.make_vec` of 16 envs (16 workers) to the first reset", way),
                             []).append(make_vec_and_reset(way == "forked"))
        # A trainer's first worker: the fork server starts with it.
        _forks.shutdown()
        for way, provider in ways.items():
            times.setdefault(("Echo, a trainer's first worker (fork server started too)", way), []).append(
                start_and_reset(provider, "echo", {}, 1))
    lines = [f"Command: `python benchmarks/bench_start.py{' --write' if args.write else ''}` "
             f"({args.rounds} interleaved rounds, medians; 2 shared cores, 1-min load {load:.1f} at start).",
             "", "| start → first reset answered | forked | spawned | forked / spawned |", "|---|---|---|---|"]
    for label in dict.fromkeys(label for label, _ in times):
        forked = statistics.median(times[(label, "forked")])
        spawned = statistics.median(times[(label, "spawned")])
        lines.append(f"| {label} | {forked * 1e3:,.0f} ms | {spawned * 1e3:,.0f} ms | {forked / spawned:.2f}× |")
    lines += ["", "| memory per worker, 8 running (PSS) | forked | spawned | forked / spawned |",
              "|---|---|---|---|"]
    for label, env, kwargs in (("Coding", "coding", {}), ("Gym-v0 CartPole", "gym", {"env_id": "CartPole-v1"})):
        forked, spawned = (memory_per_worker(ways[way], env, kwargs) for way in ("forked", "spawned"))
        lines.append(f"| {label} | {forked:.1f} MiB | {spawned:.1f} MiB | {forked / spawned:.2f}× |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("start", "## Worker start: forked vs spawned (process provider)\n\n" + text,
                      after="core")


if __name__ == "__main__":
    main()
