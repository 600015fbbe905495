"""The benchmark scripts' timed loops run as RESULTS.md's commands run them (process provider only)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


def test_bench_docker_step_median_runs_past_echos_episode_length() -> None:
    # Its 200 warm-up steps alone pass Echo's default max_steps (100), whose end the server
    # enforces: the step loop must keep one episode open for all of them.
    bench = _load("bench_docker")
    assert bench.step_median("process", 5) > 0
