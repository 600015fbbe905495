"""Benchmark of the docker provider, beside the process provider in the same run.

Measures: small Echo step median (docker vs process, ratio), cold start (container run to
first reset served, median), 8 workers started concurrently (wall time), idle worker memory,
image sizes. Prints a Markdown section; ``--write`` puts it into benchmarks/RESULTS.md
between the ``docker`` markers.

Usage:
    python benchmarks/bench_docker.py [--steps 3000] [--starts 7] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import gymnasium as gym

import openenv_gym  # noqa: F401
from openenv_gym.catalog import get_env_info
from openenv_gym.client.transport import BinaryClient
from openenv_gym.providers.docker import DockerProvider
from openenv_gym.providers.process import ProcessProvider

from _results import require_docker, write_section  # benchmarks/_results.py


def step_median(provider: str, steps: int) -> float:
    # Echo ends its episode after max_steps (default 100) and refuses steps past the end:
    # raise it, as bench_core does, so the timed steps stay in one episode.
    env = gym.make("OpenEnv/Echo-v0", provider=provider, max_steps=10**9, max_episode_steps=10**9)
    try:
        env.reset(seed=0)
        action = {"message": "hello"}
        for _ in range(200):  # warm up
            env.step(action)
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            env.step(action)
            times.append(time.perf_counter() - t)
        return statistics.median(times)
    finally:
        env.close()


def cold_start(provider, starts: int) -> float:
    times = []
    for _ in range(starts):
        t = time.perf_counter()
        [w] = provider.start("echo")
        c = BinaryClient(w.address, 30.0)
        c.request({"op": "reset", "seed": 0})
        times.append(time.perf_counter() - t)
        c.drop()
        provider.stop_all([w])
    return statistics.median(times)


def concurrent_start(provider, n: int) -> float:
    t = time.perf_counter()
    workers = provider.start("echo", n=n)
    wall = time.perf_counter() - t
    provider.stop_all(workers)
    return wall


def idle_memory(provider: DockerProvider) -> float:
    [w] = provider.start("echo")
    try:
        c = BinaryClient(w.address, 30.0)
        c.request({"op": "reset", "seed": 0})
        c.drop()
        time.sleep(1.0)  # let it settle: this measures an idle worker
        stats = w.container.stats(stream=False)["memory_stats"]
        cache = stats.get("stats", {}).get("cache", 0)
        return (stats["usage"] - cache) / 2**20
    finally:
        provider.stop_all([w])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    require_docker("bench_docker.py")

    docker_p, process_p = DockerProvider(), ProcessProvider()
    docker_p.image_for(get_env_info("echo"))  # build outside the timings
    proc_step = step_median("process", args.steps)
    dock_step = step_median("docker", args.steps)
    proc_cold = cold_start(process_p, args.starts)
    dock_cold = cold_start(docker_p, args.starts)
    proc_8 = concurrent_start(process_p, 8)
    dock_8 = concurrent_start(docker_p, 8)
    mem = idle_memory(docker_p)
    # One row per image repository: its newest build (every source change leaves a tag behind).
    newest: dict[str, tuple[str, str, int]] = {}
    for img in docker_p.client.images.list(filters={"label": "openenv-gym.project=1"}):
        for tag in img.tags:
            repo = tag.rsplit(":", 1)[0]
            if repo not in newest or img.attrs["Created"] > newest[repo][0]:
                newest[repo] = (img.attrs["Created"], tag, img.attrs["Size"])
    sizes = sorted((tag, size) for _, tag, size in newest.values())

    lines = [
        f"Command: `python benchmarks/bench_docker.py --steps {args.steps} --starts {args.starts}"
        f"{' --write' if args.write else ''}` (2 shared cores; ratios from one run; "
        f"{time.strftime('%Y-%m-%d %H:%M')}, 1-min load {os.getloadavg()[0]:.1f} at the end).",
        "",
        "| measure | docker | process | ratio | target |",
        "|---|---|---|---|---|",
        f"| Echo step, small message, median | {dock_step * 1e6:.0f} µs | {proc_step * 1e6:.0f} µs "
        f"| {dock_step / proc_step:.2f}× | ≤ 1.5× |",
        f"| cold start: container run → first reset served, median of {args.starts} "
        f"| {dock_cold:.2f} s | {proc_cold:.2f} s | {dock_cold / proc_cold:.2f}× | ≤ 1.0 s |",
        f"| 8 workers started concurrently, wall | {dock_8:.2f} s | {proc_8:.2f} s "
        f"| {dock_8 / proc_8:.2f}× | |",
        f"| idle Echo worker memory (container cgroup, no page cache) | {mem:.0f} MiB | | | |",
        "",
        "Reference (facts.md): openenv-core sleeps 1 s before polling; its containers take ~5 s.",
        "",
        "| image | size |",
        "|---|---|",
        *(f"| `{tag}` | {size / 1e6:.0f} MB |" for tag, size in sizes),
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("docker", f"## Docker provider\n\n{text}")


if __name__ == "__main__":
    main()
