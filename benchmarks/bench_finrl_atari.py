"""FinRL-v0 and Atari-v0 throughput, ours beside the local references, in one run.

- FinRL: steps/s of one remote env vs the same env in-process; vectorized steps/s of
  ``gym.make_vec`` (8 envs on 2 workers) vs Gymnasium's ``AsyncVectorEnv`` (8 processes);
  reset latency (target ≤ 5 ms median).
- Pong, n=2: ours vs ``AsyncVectorEnv`` on raw ALE/Pong-v5 (210×160×3, frameskip 4), and
  preprocessed (84×84 gray, 4-stack, noop 30, sticky actions off) ours vs ``AsyncVectorEnv``
  with the same Gymnasium wrappers vs ALE's own ``AtariVectorEnv`` (C++ threads).
  Targets: ≥ 1.0× AsyncVectorEnv, ≥ 0.9× AtariVectorEnv.
- Bytes per step on the wire (the encoded step reply) with and without preprocessing.

Random actions, construction and reset excluded; each configuration is stepped for
``--seconds`` and the median of ``--runs`` is reported.

Run:
    python benchmarks/bench_finrl_atari.py            # prints a Markdown section
    python benchmarks/bench_finrl_atari.py --write    # also puts it into benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401
from openenv_gym.vector.env import default_envs_per_worker

from _results import write_section  # benchmarks/_results.py

TICKERS = None  # all 20 stocks
PONG_PRE = dict(preprocess=True, frame_stack=4, noop_max=30, repeat_action_probability=0.0)


def _rate(step: Callable[[], Any], per_step: int, seconds: float) -> float:
    for _ in range(10):
        step()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            step()
        n += 20
    return n * per_step / (time.perf_counter() - start)


def single_rate(make: Callable[[], gym.Env], seconds: float) -> float:
    env = make()
    try:
        env.reset(seed=0)
        sample = env.action_space.sample

        def step() -> None:
            _, _, term, trunc, _ = env.step(sample())
            if term or trunc:
                env.reset()

        return _rate(step, 1, seconds)
    finally:
        env.close()


def vector_rate(make: Callable[[], gym.vector.VectorEnv], seconds: float) -> float:
    envs = make()
    try:
        envs.reset(seed=0)
        sample = envs.action_space.sample
        return _rate(lambda: envs.step(sample()), envs.num_envs, seconds)
    finally:
        envs.close()


def median(runs: int, fn: Callable[[], float]) -> float:
    return statistics.median(fn() for _ in range(runs))


def reset_ms(env: gym.Env, n: int = 200) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        env.reset()
        times.append(time.perf_counter() - t)
    env.close()
    return statistics.median(times) * 1e3


def wire_bytes(env: str, action: Any, **kwargs: Any) -> int:
    """Size of an encoded step reply, exactly as a worker sends it (plus the 4-byte length)."""
    from openenv_gym.protocol.wire import encode
    from openenv_gym.server.main import build_service

    service = build_service(env, kwargs)
    try:
        sid = service.handle({"op": "reset", "seed": 0})["sid"]
        return len(encode(service.handle({"op": "step", "sid": sid, "action": action})))
    finally:
        service.shutdown()


def finrl_rows(args: argparse.Namespace) -> list[tuple[str, float, float, str]]:
    from openenv_gym.envs.finrl.env import FinRLEnv

    kw = dict(split="train")
    local = median(args.runs, lambda: single_rate(lambda: FinRLEnv(**kw), args.seconds))
    remote = median(args.runs, lambda: single_rate(
        lambda: gym.make("OpenEnv/FinRL-v0", provider=args.provider, **kw), args.seconds))
    ours_vec = median(args.runs, lambda: vector_rate(lambda: gym.make_vec(
        "OpenEnv/FinRL-v0", num_envs=8, provider=args.provider, **kw), args.seconds))
    async_vec = median(args.runs, lambda: vector_rate(
        lambda: gym.vector.AsyncVectorEnv([lambda: FinRLEnv(**kw)] * 8), args.seconds))
    r_local = reset_ms(FinRLEnv(**kw))
    r_remote = reset_ms(gym.make("OpenEnv/FinRL-v0", provider=args.provider, **kw))
    return [
        ("FinRL single env, steps/s (remote vs in-process)", remote, local, ""),
        (f"FinRL n=8, steps/s (ours: default, {default_envs_per_worker(8)} envs per worker; "
         "AsyncVectorEnv: 8 processes)", ours_vec,
         async_vec, "≥ 1.0×"),
        ("FinRL reset, median ms (remote vs in-process)", r_remote, r_local, "≤ 5 ms"),
    ]


def pong_rows(args: argparse.Namespace) -> list[tuple[str, float, float, str]]:
    import ale_py

    gym.register_envs(ale_py)

    def ours(**kw: Any) -> Callable[[], gym.vector.VectorEnv]:
        return lambda: gym.make_vec("OpenEnv/Atari-v0", num_envs=2, provider=args.provider,
                                    game="pong", **kw)

    def async_pre() -> gym.vector.VectorEnv:
        def make() -> gym.Env:
            env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
            return gym.wrappers.FrameStackObservation(gym.wrappers.AtariPreprocessing(env, noop_max=30), 4)
        return gym.vector.AsyncVectorEnv([make] * 2)

    def ale_vector() -> gym.vector.VectorEnv:
        return ale_py.AtariVectorEnv("pong", 2, repeat_action_probability=0.0, reward_clipping=False,
                                     use_fire_reset=False)

    raw_ours = median(args.runs, lambda: vector_rate(ours(), args.seconds))
    raw_async = median(args.runs, lambda: vector_rate(
        lambda: gym.make_vec("ALE/Pong-v5", 2, vectorization_mode="async"), args.seconds))
    pre_ours = median(args.runs, lambda: vector_rate(ours(**PONG_PRE), args.seconds))
    pre_async = median(args.runs, lambda: vector_rate(async_pre, args.seconds))
    pre_ale = median(args.runs, lambda: vector_rate(ale_vector, args.seconds))
    return [
        ("Pong n=2 raw RGB, env-steps/s: ours vs AsyncVectorEnv", raw_ours, raw_async, "≥ 1.0×"),
        ("Pong n=2 preprocessed, env-steps/s: ours vs AsyncVectorEnv (same wrappers)", pre_ours,
         pre_async, "≥ 1.0×"),
        ("Pong n=2 preprocessed, env-steps/s: ours vs ALE AtariVectorEnv", pre_ours, pre_ale, "≥ 0.9×"),
    ]


def vector_wire_bytes(env: str, **kwargs: Any) -> int:
    """Bytes through one worker's socket for one vector step over shared memory, both ways:
    the constant request and the reply, which carries only what has no column (infos)."""
    from openenv_gym.protocol.wire import encode

    envs = gym.make_vec(f"OpenEnv/{env}", num_envs=1, provider="process", **kwargs)
    try:
        envs.reset(seed=0)
        piece = envs.pool.slices[0]
        piece.columns["cmd"][:] = 0  # STEP
        piece.columns["action"][:] = 0
        piece.send()
        reply = piece.receive()
        return len(piece._step_frame) + len(encode({"ok": True, **reply}))
    finally:
        envs.close()


def byte_rows() -> list[tuple[str, int]]:
    return [
        ("Pong raw RGB 210×160×3", wire_bytes("atari", 0, game="pong")),
        ("Pong preprocessed 84×84", wire_bytes("atari", 0, game="pong", preprocess=True)),
        ("Pong preprocessed 84×84, 4-stack", wire_bytes("atari", 0, game="pong", preprocess=True,
                                                        frame_stack=4)),
        ("FinRL 20 stocks (201 float32)", wire_bytes("finrl", np.zeros(20, np.float32), split="train")),
        # A vector step over shared memory moves no array through the socket: per worker, a
        # constant request and a reply with the infos only (Pong: lives, frame numbers).
        ("vector step over shared memory, per worker: Pong preprocessed, 4-stack (request + reply)",
         vector_wire_bytes("Atari-v0", game="pong", **PONG_PRE)),
        ("vector step over shared memory, per worker: FinRL (request + reply)",
         vector_wire_bytes("FinRL-v0", split="train")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--provider", default="process")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = finrl_rows(args) + pong_rows(args)
    lines = [f"Command: `python benchmarks/bench_finrl_atari.py{' --write' if args.write else ''}` "
             f"(provider {args.provider}, {args.runs} runs × {args.seconds:.0f} s, median; 2 shared "
             f"cores, 1-min load {load:.1f} at start).", "",
             "| measure | ours | reference | ours / reference | target |", "|---|---|---|---|---|"]
    for name, ours_v, ref_v, target in rows:
        lines.append(f"| {name} | {ours_v:,.1f} | {ref_v:,.1f} | {ours_v / ref_v:.2f}× | {target} |")
    lines += ["", "| step on the wire (single env: the reply; vector: both ways) | bytes |", "|---|---|"]
    lines += [f"| {name} | {size:,} |" for name, size in byte_rows()]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("finrl-atari", f"## FinRL-v0 and Atari-v0 (issue 6)\n\n{text}")


if __name__ == "__main__":
    main()
