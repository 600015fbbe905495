"""FinRL-v0 and Atari-v0 throughput, ours beside the local references, in one run.

- FinRL: steps/s of one remote env vs the same env in-process; vectorized steps/s of
  ``gym.make_vec`` (8 envs on 2 workers) vs Gymnasium's ``AsyncVectorEnv`` (8 processes);
  reset latency (target ≤ 5 ms median).
- Pong, n=2: ours vs ``AsyncVectorEnv`` and ALE's ``AtariVectorEnv`` set to the same settings
  on raw ALE/Pong-v5 (210×160×3, frameskip 4, sticky actions), and
  preprocessed (84×84 gray, 4-stack, noop 30, sticky actions off) ours vs ``AsyncVectorEnv``
  with the same Gymnasium wrappers vs ALE's own ``AtariVectorEnv`` (C++ threads).
  Targets: ≥ 1.0× AsyncVectorEnv, ≥ 0.9× AtariVectorEnv. And, with no target, the
  preprocessed pair again with a CNN policy's forward pass choosing each batch of actions,
  as in training: what the environments' gap is worth once a policy runs beside them.
- Bytes per step on the wire (the encoded step reply) with and without preprocessing.

Random actions, construction and reset excluded; each configuration is stepped for
``--seconds`` and the median of ``--runs`` is reported. The runs of the configurations
compared in a row alternate (ours, reference, ours, ...), so that the machine's drift over
minutes (2 shared cores) falls on both sides of a ratio alike.

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
#: ALE's vector env set to PONG_PRE's settings (its defaults are the rest: 84×84 gray, 4-stack,
#: noop 30, max-pooled frameskip 4).
ALE_PRE = dict(repeat_action_probability=0.0, reward_clipping=False, use_fire_reset=False)
#: ALE's vector env set to ALE/Pong-v5's own settings (full RGB frames, frameskip 4, sticky
#: actions, no preprocessing): it then gives ALE/Pong-v5's frames, so the same work as ours.
ALE_V5_RAW = dict(img_height=210, img_width=160, grayscale=False, stack_num=1, maxpool=False,
                  noop_max=0, repeat_action_probability=0.25, reward_clipping=False,
                  use_fire_reset=False)


def ale_pong(settings: dict[str, Any], num_envs: int = 2) -> Callable[[], gym.vector.VectorEnv]:
    """A maker of ALE's own vector env of ``num_envs`` Pong envs set to ``settings``
    (:data:`ALE_PRE` or :data:`ALE_V5_RAW`), the reference both Pong scripts measure against."""
    def make() -> gym.vector.VectorEnv:
        import ale_py  # only the Pong rows need it

        return ale_py.AtariVectorEnv("pong", num_envs, **settings)

    return make

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


def policy_rate(make: Callable[[], gym.vector.VectorEnv], seconds: float) -> float:
    """Env-steps/s of a loop that picks each batch of actions with a CNN policy's forward pass
    (SB3's ``NatureCNN`` and a linear head, torch's default threads), as a PPO rollout does."""
    import torch
    from stable_baselines3.common.torch_layers import NatureCNN

    envs = make()
    try:
        obs, _ = envs.reset(seed=0)
        torch.manual_seed(0)
        cnn = NatureCNN(gym.spaces.Box(0, 255, obs.shape[1:], np.uint8))
        head = torch.nn.Linear(cnn.features_dim, int(envs.single_action_space.n))

        def step() -> None:
            nonlocal obs
            with torch.no_grad():
                logits = head(cnn(torch.as_tensor(obs).float() / 255))
            obs = envs.step(torch.distributions.Categorical(logits=logits).sample().numpy())[0]

        return _rate(step, envs.num_envs, seconds)
    finally:
        envs.close()


def alternated(runs: int, measures: list[Callable[[], float]]) -> list[float]:
    """The median of ``runs`` runs of each measure, the measures run in turn in each round."""
    results: list[list[float]] = [[] for _ in measures]
    for _ in range(runs):
        for out, measure in zip(results, measures):
            out.append(measure())
    return [statistics.median(out) for out in results]


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
    local, remote, ours_vec, async_vec = alternated(args.runs, [
        lambda: single_rate(lambda: FinRLEnv(**kw), args.seconds),
        lambda: single_rate(lambda: gym.make("OpenEnv/FinRL-v0", provider=args.provider, **kw),
                            args.seconds),
        lambda: vector_rate(lambda: gym.make_vec("OpenEnv/FinRL-v0", num_envs=8,
                                                 provider=args.provider, **kw), args.seconds),
        lambda: vector_rate(lambda: gym.vector.AsyncVectorEnv([lambda: FinRLEnv(**kw)] * 8),
                            args.seconds),
    ])
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

    raw_ours, raw_async, raw_ale = alternated(args.runs, [
        lambda: vector_rate(ours(), args.seconds),
        lambda: vector_rate(lambda: gym.make_vec("ALE/Pong-v5", 2, vectorization_mode="async"),
                            args.seconds),
        lambda: vector_rate(ale_pong(ALE_V5_RAW), args.seconds),
    ])
    pre_ours, pre_async, pre_ale = alternated(args.runs, [
        lambda: vector_rate(ours(**PONG_PRE), args.seconds),
        lambda: vector_rate(async_pre, args.seconds),
        lambda: vector_rate(ale_pong(ALE_PRE), args.seconds),
    ])
    policy_ours, policy_ale = alternated(args.runs, [
        lambda: policy_rate(ours(**PONG_PRE), args.seconds),
        lambda: policy_rate(ale_pong(ALE_PRE), args.seconds),
    ])
    return [
        ("Pong n=2 raw RGB, env-steps/s: ours vs AsyncVectorEnv", raw_ours, raw_async, "≥ 1.0×"),
        ("Pong n=2 raw RGB, env-steps/s: ours vs ALE AtariVectorEnv (ALE/Pong-v5's settings)",
         raw_ours, raw_ale, "≥ 0.9×"),
        ("Pong n=2 preprocessed, env-steps/s: ours vs AsyncVectorEnv (same wrappers)", pre_ours,
         pre_async, "≥ 1.0×"),
        ("Pong n=2 preprocessed, env-steps/s: ours vs ALE AtariVectorEnv", pre_ours, pre_ale, "≥ 0.9×"),
        ("Pong n=2 preprocessed, a CNN policy (SB3's NatureCNN) choosing each action, env-steps/s: "
         "ours vs ALE AtariVectorEnv", policy_ours, policy_ale, ""),
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


def _figure(value: float) -> str:
    """A rate with one decimal; a sub-millisecond latency with two significant digits."""
    return f"{value:,.1f}" if value >= 1 else f"{value:.2g}"


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
             f"(provider {args.provider}, {args.runs} runs × {args.seconds:g} s, median; 2 shared "
             f"cores, 1-min load {load:.1f} at start).", "",
             "| measure | ours | reference | ours / reference | target |", "|---|---|---|---|---|"]
    for name, ours_v, ref_v, target in rows:
        lines.append(f"| {name} | {_figure(ours_v)} | {_figure(ref_v)} | {ours_v / ref_v:.2f}× | {target} |")
    lines += ["", "| step on the wire (single env: the reply; vector: both ways) | bytes |", "|---|---|"]
    lines += [f"| {name} | {size:,} |" for name, size in byte_rows()]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("finrl-atari", f"## FinRL-v0 and Atari-v0 (issue 6)\n\n{text}")


if __name__ == "__main__":
    main()
