"""Coding-v0's grader against the design it replaced, in one interleaved run.

Now (``grader.grade``): the completion runs in a child that answers calls; the checks run
in the worker. Before (commit d5671d4, ``Sandbox.run_checks``): the completion and its
checks ran in one child, which reported passes through a results file. The old code is
read from git into a temporary folder, so this runs from any checkout with history.

Run: ``python benchmarks/bench_coding_grader.py [--problems 40] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import load_problems
from openenv_gym.envs.coding.sandbox import Sandbox

BEFORE = "d5671d4"


def old_sandbox_class(folder: Path) -> type:
    """``Sandbox`` as of :data:`BEFORE` (its runner beside it, as it expects)."""
    root = Path(__file__).resolve().parent.parent
    for name in ("sandbox.py", "runner.py"):
        source = subprocess.run(["git", "-C", str(root), "show", f"{BEFORE}:openenv_gym/envs/coding/{name}"],
                                check=True, capture_output=True, text=True).stdout
        (folder / name).write_text(source)
    spec = importlib.util.spec_from_file_location("old_sandbox", folder / "sandbox.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.Sandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        old, new = old_sandbox_class(Path(folder))(), Sandbox()
        before, now = [], []
        try:
            for _ in range(args.rounds):
                for problem in load_problems()[: args.problems]:
                    program = problem.prompt + problem.canonical_solution
                    start = time.perf_counter()
                    _, passed_before = old.run_checks(program, problem, 10.0, 3.0)
                    before.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    _, passed_now = grade(new, program, problem, 10.0, 3.0)
                    now.append(time.perf_counter() - start)
                    if passed_before != passed_now:
                        sys.exit(f"{problem.task_id}: the two graders disagree")
        finally:
            old.close()
            new.close()
    print(f"HumanEval 0-{args.problems - 1} canonical x {args.rounds}: before {statistics.median(before) * 1e3:.1f} ms, "
          f"now {statistics.median(now) * 1e3:.1f} ms per step; now/before "
          f"{statistics.median(n / b for n, b in zip(now, before)):.2f}x (median of pairs)")


if __name__ == "__main__":
    main()
