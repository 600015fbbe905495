"""Pong n=2: where one vector step's time goes, stamp by stamp, in the product and in a bare
loop over the same workers, beside ALE's ``AtariVectorEnv`` (issue 6).

``bench_pong_floor.py`` says how far each way is from ALE's vector env; this says where the
distance is. The trainer stamps its step (entry, its requests sent, the replies taken, return);
each worker stamps every request that steps its env (read, env step start and end, reply sent),
through ``benchmarks/_timeline_site/sitecustomize.py``, which the fork server and so every
worker imports at start-up. All stamps are ``time.perf_counter_ns()``, the machine's monotonic
clock, so a trainer's step and its two workers' requests line up. The wrappers that stamp cost
~1 µs each, in both loops alike.

- ``RemoteVectorEnv``: ``gym.make_vec("OpenEnv/Atari-v0", num_envs=2)``, the product.
- The bare loop over the same workers (``bench_pong_floor.py``'s): actions into the columns,
  the two constant requests, the two replies, the results copied out; nothing else.
- ALE's C++ vector env, timed per step in blocks between the others', for the ratio.

With ``--policy`` a CNN policy's forward pass (SB3's ``NatureCNN``, torch's default threads)
picks each batch of actions, as in a PPO rollout; the bare loop is left out there. It also
reports the whole loop (forward pass and step) against ALE's, since what a worker does while
the policy runs (spin or sleep) moves time between the two.

Run: ``python benchmarks/bench_pong_timeline.py [--blocks 8] [--policy [--torch-threads N]] [--write]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import numpy as np

HERE = Path(__file__).resolve().parent
STEPS_PER_BLOCK = 150
PHASES = {
    "pre": "trainer, step called → first request sent",
    "send": "trainer sends both requests",
    "start_first": "first worker has its request (from the first send)",
    "start_second": "second worker has its request (from the first send)",
    "env_first": "env step, the worker answering first",
    "env_last": "env step, the worker answering last",
    "serve": "worker serving around its env step (request read → env; env → reply sent)",
    "wake": "trainer takes the replies (last reply sent → replies taken)",
    "post": "trainer, replies taken → step returns",
    "total": "whole step",
}


def stamp_pool(envs: Any, marks: dict[str, int]) -> None:
    """Stamp the product's sends and receives (its pool's two calls a step) into ``marks``."""
    pool = envs.pool
    send, receive = pool.send_slices, pool.receive_slices

    def stamped_send(*args: Any, **kwargs: Any) -> Any:
        marks["sending"] = time.perf_counter_ns()
        result = send(*args, **kwargs)
        marks["sent"] = time.perf_counter_ns()
        return result

    def stamped_receive(*args: Any, **kwargs: Any) -> Any:
        result = receive(*args, **kwargs)
        marks["taken"] = time.perf_counter_ns()
        return result

    pool.send_slices, pool.receive_slices = stamped_send, stamped_receive


def phases(steps: list[tuple[int, ...]], served: list[np.ndarray]) -> dict[str, list[float]]:
    """Each phase's durations (µs) over the trainer's ``steps`` (entry, sending, sent, taken,
    return) matched with the rows the two workers logged for them (``served``, one array each:
    read, env start, env end, reply send start, reply send end)."""
    out: dict[str, list[float]] = {name: [] for name in PHASES}
    for entry, sending, sent, taken, ret in steps:
        rows = []
        for log in served:
            i = int(np.searchsorted(log[:, 0], sending))
            if i < len(log) and log[i, 0] < taken:
                rows.append(log[i])
        if len(rows) != 2:
            continue  # a step whose requests the logs do not hold (written every 100 rows)
        first, last = sorted(rows, key=lambda row: row[3])
        values = {"pre": sending - entry, "send": sent - sending,
                  "start_first": min(first[0], last[0]) - sending,
                  "start_second": max(first[0], last[0]) - sending,
                  "env_first": first[2] - first[1], "env_last": last[2] - last[1],
                  "serve": sum((r[1] - r[0]) + (r[3] - r[2]) for r in rows) / 2,
                  "wake": taken - last[3], "post": ret - taken, "total": ret - entry}
        for name, ns in values.items():
            out[name].append(ns / 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--policy", action="store_true", help="a CNN policy picks each batch of actions")
    parser.add_argument("--torch-threads", type=int, default=0,
                        help="with --policy: torch's threads (default: torch's own choice)")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    folder = tempfile.mkdtemp(prefix="pong-timeline-")
    # Before the vector env starts its fork server: the workers forked from it inherit both.
    os.environ["OPENENV_GYM_TIMELINE_DIR"] = folder
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE / "_timeline_site"),
                                                            os.environ.get("PYTHONPATH")) if p)
    import openenv_gym  # noqa: F401  (registers OpenEnv/*)
    from openenv_gym.protocol.slices import STEP

    from _results import write_section  # benchmarks/_results.py
    from bench_finrl_atari import ALE_PRE, PONG_PRE, ale_pong
    from bench_pong_floor import same_workers_loop

    ours = gym.make_vec("OpenEnv/Atari-v0", num_envs=2, provider="process", game="pong", **PONG_PRE)
    ale = ale_pong(ALE_PRE)()
    marks: dict[str, int] = {}
    stamp_pool(ours, marks)
    ways: dict[str, Callable[[np.ndarray], Any]] = {"RemoteVectorEnv": ours.step}
    if not args.policy:
        ways["bare loop, same workers"] = same_workers_loop(ours, marks)
    choose: Callable[[Any, int], np.ndarray]
    if args.policy:
        import torch
        from stable_baselines3.common.torch_layers import NatureCNN

        torch.manual_seed(0)
        if args.torch_threads:
            torch.set_num_threads(args.torch_threads)
        cnn = NatureCNN(gym.spaces.Box(0, 255, ours.single_observation_space.shape, np.uint8))
        head = torch.nn.Linear(cnn.features_dim, 6)

        def choose(obs: Any, _: int) -> np.ndarray:
            with torch.no_grad():
                logits = head(cnn(torch.as_tensor(obs).float() / 255))
            return torch.distributions.Categorical(logits=logits).sample().numpy()
    else:
        rng = np.random.default_rng(0)
        fixed = [rng.integers(0, 6, 2) for _ in range(STEPS_PER_BLOCK)]

        def choose(obs: Any, k: int) -> np.ndarray:
            return fixed[k]

    steps: dict[str, list[tuple[int, ...]]] = {name: [] for name in ways}
    ale_steps: list[float] = []
    loops: dict[str, list[float]] = {"RemoteVectorEnv": [], "ale": []}  # forward pass + step, µs
    try:
        for _ in range(args.blocks):
            for name, step in ways.items():
                obs, _ = ours.reset(seed=0)
                for piece in ours.pool.slices:  # the bare loop leaves the command column as is
                    piece.columns["cmd"][:] = STEP
                if name != "RemoteVectorEnv":
                    obs = step(np.zeros(2, np.int64))[0]  # the columns hold a step's command now
                for k in range(STEPS_PER_BLOCK):
                    begin = time.perf_counter_ns()
                    actions = choose(obs, k)
                    entry = time.perf_counter_ns()
                    obs = step(actions)[0]
                    ret = time.perf_counter_ns()
                    steps[name].append((entry, marks["sending"], marks["sent"], marks["taken"], ret))
                    if name in loops:
                        loops[name].append((ret - begin) / 1e3)
            obs, _ = ale.reset(seed=0)
            for k in range(STEPS_PER_BLOCK):
                begin = time.perf_counter()
                actions = choose(obs, k)
                start = time.perf_counter()
                obs = ale.step(actions)[0]
                ale_steps.append((time.perf_counter() - start) * 1e6)
                loops["ale"].append((time.perf_counter() - begin) * 1e6)
    finally:
        ours.close()
        ale.close()
    time.sleep(0.2)
    served = [np.load(path) for path in sorted(Path(folder).glob("*.npy"))]
    shutil.rmtree(folder, ignore_errors=True)
    if len(served) != 2:
        raise SystemExit(f"expected the stamps of 2 workers in {folder}, found {len(served)}")
    found = {name: phases(rows, served) for name, rows in steps.items()}
    ale_median = statistics.median(ale_steps)
    flags = "".join(flag for flag, given in ((" --policy", args.policy),
                                             (f" --torch-threads {args.torch_threads}", args.torch_threads),
                                             (" --write", args.write)) if given)
    lines = [f"Command: `python benchmarks/bench_pong_timeline.py{flags}` ({args.blocks} blocks of "
             f"{STEPS_PER_BLOCK} steps each way, medians in µs; 2 shared cores, 1-min load {load:.1f} "
             f"at start; {len(found['RemoteVectorEnv']['total'])} product steps matched with both "
             "workers' stamps).", "",
             "| phase of one vector step (Pong n=2, preprocessed" + (", a CNN policy" if args.policy else "")
             + ") | " + " | ".join(found) + " |", "|---|" + "---|" * len(found)]
    for key, label in PHASES.items():
        cells = " | ".join(f"{statistics.median(v[key]):.0f}" for v in found.values())
        lines.append(f"| {label} | {cells} |")
    lines.append(f"| ALE AtariVectorEnv's step, same run | {ale_median:.0f}" + " |" * len(found))
    ratios = "; ".join(f"{name} {ale_median / statistics.median(v['total']):.2f}×"
                       for name, v in found.items())
    # A second worker that got its request only after the first one's env step: the two ran
    # one after the other, not side by side.
    serial = "; ".join(f"{name} {100 * np.mean(np.array(v['start_second']) > np.array(v['env_first'])):.0f}%"
                       for name, v in found.items())
    lines += ["", f"Median step against ALE's: {ratios}. Steps whose second worker got its request "
              f"only after the first worker's env step had ended: {serial}."]
    if args.policy:
        ours_loop, ale_loop = statistics.median(loops["RemoteVectorEnv"]), statistics.median(loops["ale"])
        lines.append(f"The whole loop (forward pass, then step): {ours_loop:.0f} µs against ALE's "
                     f"{ale_loop:.0f} ({ale_loop / ours_loop:.2f}×).")
    text = "\n".join(lines)
    print(text)
    if args.write:
        section = "pong-timeline-policy" if args.policy else "pong-timeline"
        after = "pong-timeline" if args.policy else "pong-floor-raw"
        write_section(section, "## Pong n=2: one vector step, stamp by stamp"
                      + (", with a CNN policy" if args.policy else "") + f" (issue 6)\n\n{text}", after=after)


if __name__ == "__main__":
    main()
