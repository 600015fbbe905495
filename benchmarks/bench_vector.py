"""Vector-env throughput: RemoteVectorEnv beside Gymnasium's AsyncVectorEnv and SB3's SubprocVecEnv.

Random actions, env-steps/s = vector steps x num_envs / wall time (construction, reset and a
short warm-up excluded). All rows of a suite are built first, then stepped in interleaved
rounds (median per row), so load from other users of the machine hits every row alike:
read the ratios against each suite's reference.

Suites:
    cartpole  Gym-v0 CartPole-v1, num_envs=8: ours (envs_per_worker 1, 4, 8) vs AsyncVectorEnv
              n=8 (shared memory) vs SB3 SubprocVecEnv n=8.
    heavy     Atari-v0 pong (= ALE/Pong-v5, 210x160 RGB) n=2 vs AsyncVectorEnv n=2.
    scaling   num_envs 1..64: ours on 2 workers (one per core) and one worker per env,
              vs AsyncVectorEnv n.
    fanout    how one vector step reaches the workers: send-all-then-gather on one thread
              (what RemoteVectorEnv does) vs a thread per worker, 8 workers (median of 5
              interleaved runs each).

    python benchmarks/bench_vector.py                    # every suite
    python benchmarks/bench_vector.py --suite cartpole --seconds 3
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.vector.env import default_envs_per_worker

from _results import require_docker  # benchmarks/_results.py

WARMUP = 20


class Timed:
    """A live vector env (Gymnasium or SB3 API) that can be stepped for a while at a time."""

    def __init__(self, make: Callable[[], Any], sb3: bool = False) -> None:
        self.venv = make()
        self.sb3 = sb3
        self.n = self.venv.num_envs
        if sb3:
            n_actions = self.venv.action_space.n
            self.actions = list(np.random.default_rng(0).integers(0, n_actions, size=(256, self.n)))
            self.venv.seed(0)
            self.venv.reset()
        else:
            self.actions = [self.venv.action_space.sample() for _ in range(256)]
            self.venv.reset(seed=0)
        for i in range(WARMUP):
            self.venv.step(self.actions[i])
        self.rates: list[float] = []

    def run(self, seconds: float) -> float:
        """Step for ``seconds``; returns (and keeps) env-steps/s."""
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for i in range(16):
                self.venv.step(self.actions[(steps + i) % 256])
            steps += 16
        self.rates.append(steps * self.n / (time.perf_counter() - start))
        return self.rates[-1]

    def close(self) -> None:
        self.venv.close()


def measure(configs: dict[str, tuple[Callable[[], Any], bool]], seconds: float,
            rounds: int = 5) -> list[tuple[str, float]]:
    """Build every config, then step them in interleaved rounds; median env-steps/s each.

    Interleaving makes load from other users of the machine hit every row alike.
    """
    live: dict[str, Timed] = {}
    try:
        for name, (make, sb3) in configs.items():
            live[name] = Timed(make, sb3)
        for _ in range(rounds):
            for timed in live.values():
                timed.run(seconds / rounds)
        return [(name, float(np.median(t.rates))) for name, t in live.items()]
    finally:
        for timed in live.values():
            timed.close()


def ours(n: int, per_worker: int | None, provider: str, env: str = "OpenEnv/Gym-v0", **kwargs: Any) -> Callable[[], Any]:
    kwargs = kwargs or {"env_id": "CartPole-v1"}
    return lambda: gym.make_vec(env, num_envs=n, provider=provider, envs_per_worker=per_worker, **kwargs)


def async_env(env_id: str, n: int) -> Callable[[], Any]:
    return lambda: gym.make_vec(env_id, n, vectorization_mode="async", vector_kwargs={"shared_memory": True})


def report(rows: list[tuple[str, float]], reference: str) -> None:
    ref = dict(rows)[reference]
    for name, value in rows:
        print(f"  {name:48s} {value:10.0f}   {value / ref:5.2f}x", flush=True)


def suite_cartpole(seconds: float, provider: str) -> None:
    print(f"# (a) CartPole-v1, num_envs=8, provider={provider}; ratio vs AsyncVectorEnv n=8")
    configs: dict[str, tuple[Callable[[], Any], bool]] = {
        "AsyncVectorEnv n=8 (shm)": (async_env("CartPole-v1", 8), False)}
    configs[f"RemoteVectorEnv n=8 default (envs_per_worker={default_envs_per_worker(8)})"] = (
        ours(8, None, provider), False)
    for k in (1, 4, 8):
        configs[f"RemoteVectorEnv n=8 envs_per_worker={k}"] = (ours(8, k, provider), False)
    try:
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import SubprocVecEnv

        from openenv_gym.sb3 import RemoteVecEnv

        configs["SB3 SubprocVecEnv n=8"] = (
            lambda: make_vec_env("CartPole-v1", n_envs=8, vec_env_cls=SubprocVecEnv), True)
        configs["SB3 RemoteVecEnv n=8 default"] = (
            lambda: RemoteVecEnv("gym", 8, env_id="CartPole-v1", provider=provider), True)
    except ImportError:
        print("  (stable-baselines3 not installed: SB3 rows skipped)")
    report(measure(configs, seconds), "AsyncVectorEnv n=8 (shm)")


def suite_heavy(seconds: float, provider: str) -> None:
    import ale_py

    gym.register_envs(ale_py)
    print(f"# (b) Pong (ALE/Pong-v5 settings, 210x160x3 frames), num_envs=2, provider={provider}")
    rows = measure({
        "AsyncVectorEnv ALE/Pong-v5 n=2 (shm)": (async_env("ALE/Pong-v5", 2), False),
        "RemoteVectorEnv Atari-v0 pong n=2 envs_per_worker=1":
            (ours(2, 1, provider, "OpenEnv/Atari-v0", game="pong"), False),
    }, seconds)
    report(rows, "AsyncVectorEnv ALE/Pong-v5 n=2 (shm)")


def suite_scaling(seconds: float, provider: str, sizes: list[int]) -> None:
    print(f"# (c) CartPole-v1 scaling, provider={provider}; env-steps/s (ratio vs AsyncVectorEnv n)")
    print(f"  {'num_envs':>8s} {'Async':>9s} {'ours default':>20s} {'ours 1 env/worker':>20s}")
    for n in sizes:
        rates = dict(measure({
            "async": (async_env("CartPole-v1", n), False),
            "two": (ours(n, None, provider), False),  # one worker per core
            "one": (ours(n, 1, provider), False),
        }, seconds, rounds=3))
        ref, two, one = rates["async"], rates["two"], rates["one"]
        print(f"  {n:8d} {ref:9.0f} {two:12.0f} ({two / ref:4.2f}x) {one:12.0f} ({one / ref:4.2f}x)",
              flush=True)


def suite_fanout(seconds: float, provider: str) -> None:
    from openenv_gym.protocol.slices import RESET, STEP_AUTORESET
    from openenv_gym.providers import get_provider
    from openenv_gym.spaces import space_from_dict
    from openenv_gym.vector.pool import WorkerPool

    print(f"# fan-out of one vector step to 8 workers (1 env each), provider={provider}")
    pool = WorkerPool(get_provider(provider), "gym", 8, 1, {"env_id": "CartPole-v1"})
    try:
        spec = pool.request(0, {"op": "spec"})["spec"]
        pool.open_slices(space_from_dict(spec["observation_space"]), space_from_dict(spec["action_space"]))
        for piece in pool.slices:
            piece.columns["cmd"][:] = RESET
        pool.send_slices(list(range(8)), {w: {"seeds": [w]} for w in range(8)})
        pool.receive_slices(list(range(8)))
        for piece in pool.slices:  # from now on: step, resetting ended episodes at once
            piece.columns["cmd"][:] = STEP_AUTORESET
            piece.columns["action"][:] = 0
        threads = ThreadPoolExecutor(8)

        def one_thread() -> None:
            pool.send_slices(list(range(8)))
            pool.receive_slices(list(range(8)))

        def thread_per_worker() -> None:
            list(threads.map(lambda w: (pool.slices[w].send(), pool.slices[w].receive()), range(8)))

        # Interleaved short runs, median of each: load from other users hits both alike.
        runs: dict[str, list[float]] = {"send-all-then-gather, one thread": [], "a thread per worker": []}
        for _ in range(5):
            for name, fn in (("send-all-then-gather, one thread", one_thread),
                             ("a thread per worker", thread_per_worker)):
                steps, start = 0, time.perf_counter()
                while time.perf_counter() - start < seconds / 3:
                    fn()
                    steps += 8
                runs[name].append(steps / (time.perf_counter() - start))
        rows = [(name, float(np.median(values))) for name, values in runs.items()]
        threads.shutdown()
        report(rows, "a thread per worker")
    finally:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", choices=["all", "cartpole", "heavy", "scaling", "fanout"], default="all")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per row")
    parser.add_argument("--provider", default="process")
    parser.add_argument("--sizes", default="1,2,4,8,16,32,64", help="num_envs of the scaling curve")
    args = parser.parse_args()
    if args.provider == "docker":  # stop before the first suite, not in its first docker row
        require_docker("bench_vector.py --provider docker", instead="pass --provider process")
    print(f"# cpus={os.cpu_count()} load1={os.getloadavg()[0]:.2f} gymnasium={gym.__version__}")
    if args.suite in ("all", "cartpole"):
        suite_cartpole(args.seconds, args.provider)
    if args.suite in ("all", "heavy"):
        suite_heavy(args.seconds, args.provider)
    if args.suite in ("all", "fanout"):
        suite_fanout(args.seconds, args.provider)
    if args.suite in ("all", "scaling"):
        suite_scaling(min(args.seconds, 2.0), args.provider, [int(s) for s in args.sizes.split(",")])
    print(f"# load1 at the end={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
