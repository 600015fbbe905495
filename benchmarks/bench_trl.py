"""Completions scored per second through the TRL adapter (EnvReward over an EnvPool).

Each "completion" is a HumanEval solution (canonical, or broken on purpose for every
third one so both passing and failing test runs are timed) scored by ``OpenEnv/Coding-v0``
in task mode: the fraction of the problem's asserts that pass. Measured with 1, 4 and 8
workers, and through one tool env as TRL's own agent loop (``environment_factory``) drives
it; the reference in the same run is a plain loop over one ``gym.make`` RemoteEnv
(reset + step per completion), i.e. what scoring without the adapter's fan-out costs.

    python benchmarks/bench_trl.py --provider docker --completions 48 --write

Docker is the default provider: without an engine the run stops at once with the reason
(pass ``--provider process``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import openenv_gym  # noqa: F401
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.trl import EnvPool, EnvReward, tool_env_factory

from _results import require_docker, write_section  # benchmarks/_results.py


def workload(n: int) -> tuple[list[str], list[int]]:
    completions, problems = [], []
    for i in range(n):
        p = i % 40
        solution = get_problem(p).canonical_solution
        completions.append(solution if i % 3 else "    return None\n")
        problems.append(p)
    return completions, problems


def bench_pool(provider: str, workers: int, completions: list[str], problems: list[int],
               repeats: int) -> tuple[float, list[float]]:
    with EnvPool("coding", num_workers=workers, provider=provider, task="humaneval") as pool:
        reward = EnvReward(pool, option_columns=("problem",))
        reward(completions=completions[: workers * 2], problem=problems[: workers * 2])  # warm up
        rates, rewards = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            rewards = reward(completions=completions, problem=problems)
            rates.append(len(completions) / (time.perf_counter() - t))
        assert not pool.failures, pool.failures
    return statistics.median(rates), rewards


def bench_loop(provider: str, completions: list[str], problems: list[int]) -> tuple[float, list[float]]:
    env = gym.make("OpenEnv/Coding-v0", provider=provider, task="humaneval")
    try:
        env.reset(options={"problem": 0})
        t = time.perf_counter()
        rewards = []
        for code, p in zip(completions, problems):
            env.reset(options={"problem": p})
            rewards.append(env.step({"code": code})[1])
        return len(completions) / (time.perf_counter() - t), rewards
    finally:
        env.close()


def bench_tools(provider: str, completions: list[str], problems: list[int]) -> tuple[float, list[float]]:
    """The same scoring as TRL's agent loop drives it: one tool env, a reset per row, one
    ``run_python`` call with the completion, then ``get_reward``."""
    with EnvPool("coding", num_workers=1, provider=provider, task="humaneval") as pool:
        env = tool_env_factory(pool, option_columns=("problem",))()
        env.reset(prompt="warm-up", problem=0)
        env.run_python(completions[0])
        env.get_reward()
        t = time.perf_counter()
        rewards = []
        for code, p in zip(completions, problems):
            env.reset(prompt=f"problem {p}", problem=p)
            env.run_python(code)
            rewards.append(env.get_reward())
        return len(completions) / (time.perf_counter() - t), rewards


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--provider", default="docker", choices=["docker", "process"])
    ap.add_argument("--completions", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="update the trl section of RESULTS.md")
    args = ap.parse_args()
    if args.provider == "docker":  # stop before the first row, not at it
        default = " (the default)" if args.provider == ap.get_default("provider") else ""
        require_docker(f"bench_trl.py --provider docker{default}", instead="pass --provider process")
    completions, problems = workload(args.completions)
    loop_rate, loop_rewards = bench_loop(args.provider, completions, problems)
    rows = []
    for workers in (1, 4, 8):
        rate, rewards = bench_pool(args.provider, workers, completions, problems, args.repeats)
        assert rewards == loop_rewards, "the adapter must score exactly as the env does"
        rows.append((workers, rate))
        print(f"{workers} workers: {rate:.1f} completions/s ({rate / loop_rate:.2f}x the plain loop)", flush=True)
    tools_rate, tools_rewards = bench_tools(args.provider, completions, problems)
    assert tools_rewards == loop_rewards, "the tool env must score exactly as the env does"
    print(f"plain RemoteEnv loop: {loop_rate:.1f} completions/s; tool env: {tools_rate:.1f}")
    mean_reward = sum(loop_rewards) / len(loop_rewards)
    table = [
        "| scorer | completions/s | vs plain loop | vs 1 worker |",
        "|---|---|---|---|",
        f"| plain `gym.make` RemoteEnv loop (reference) | {loop_rate:.1f} | 1.00× | |",
    ] + [f"| EnvReward, {w} worker{'s' if w > 1 else ''} | {r:.1f} | {r / loop_rate:.2f}× | {r / rows[0][1]:.2f}× |"
         for w, r in rows] + [
        f"| `CodingTools` (TRL `environment_factory`), 1 env: reset, `run_python`, `get_reward` "
        f"| {tools_rate:.1f} | {tools_rate / loop_rate:.2f}× | {tools_rate / rows[0][1]:.2f}× |"]
    body = "\n".join([
        "## TRL adapter: completions scored per second (issue 10)",
        "",
        f"Command: `python benchmarks/bench_trl.py --provider {args.provider} --completions {args.completions}"
        f"{' --write' if args.write else ''}`. "
        f"{args.completions} HumanEval completions per batch (problems 0–39, every third one wrong: "
        f"mean reward {mean_reward:.2f}), each run against its problem's asserts in `OpenEnv/Coding-v0` "
        f"({args.provider} workers); median of {args.repeats} batches after a warm-up. Rewards are checked "
        "equal to the plain loop's. 2 shared cores: more workers than cores still helps while episodes "
        "wait on test subprocesses, but the scaling flattens at the core count.",
        "",
        *table,
    ])
    print(body)
    if args.write:
        write_section("trl", body)


if __name__ == "__main__":
    main()
