"""Core runtime latency: our client vs openenv-core's, measured in one run on this machine.

Measures, for ``OpenEnv/Echo-v0`` on the process provider (binary path, Unix socket):
  * round trip of a small step ("hello world") — median and p99;
  * round trip of a step whose observation carries a 210x160x3 uint8 frame;
  * ``import openenv_gym`` time (fresh interpreter);
  * worker cold start: a trainer's first worker (fork server included) -> first reset served.
and runs ``../shared/anchors/openenv_core_echo.py`` (openenv-core's own client and server)
in the same run for the reference figures, then prints ratios.

openenv-core stays out of our dependencies: it runs from its own venv::

    python3 -m venv /tmp/oe-venv && /tmp/oe-venv/bin/pip install openenv-core
    python benchmarks/bench_core.py --oe-python /tmp/oe-venv/bin/python

Without ``--oe-python`` (or when that interpreter is missing) only our figures are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.transport import BinaryClient
from openenv_gym.providers import _forks, get_provider

ROOT = Path(__file__).resolve().parents[1]
ANCHOR = ROOT.parent / "shared" / "anchors" / "openenv_core_echo.py"


def percentiles(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(1e3 * s for s in samples_s)
    return {"median_ms": statistics.median(ms), "p99_ms": ms[min(len(ms) - 1, int(0.99 * len(ms)))]}


def time_steps(env: gym.Env, action: dict, n: int, warmup: int = 50) -> dict[str, float]:
    env.reset(seed=0)
    lat = []
    for i in range(n + warmup):
        t0 = time.perf_counter()
        _, _, _, truncated, _ = env.step(action)
        dt = time.perf_counter() - t0
        if i >= warmup:
            lat.append(dt)
        if truncated:
            env.reset()
    return percentiles(lat)


def import_time(python: str, module: str, runs: int = 5) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    times = []
    for _ in range(runs):
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def cold_start(runs: int = 5) -> float:
    """Median seconds from starting a trainer's first worker to its first reset answered.

    "First": the fork server that forks the later ones (``bench_start.py``) starts with it.
    """
    provider = get_provider("process")
    times = []
    for _ in range(runs):
        _forks.shutdown()
        t0 = time.perf_counter()
        [worker] = provider.start("echo")
        client = BinaryClient(worker.address, timeout=30)
        client.request({"op": "reset"})
        times.append(time.perf_counter() - t0)
        client.close()
        provider.stop_all([worker])
    return statistics.median(times)


def reference(oe_python: str, quick: bool) -> dict | None:
    if not (oe_python and Path(oe_python).exists() and ANCHOR.exists()):
        return None
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out_path = f.name
    args = [oe_python, str(ANCHOR), "--no-mcp", "--json-out", out_path, "--concurrency", "1"]
    if quick:
        args.append("--quick")
    else:
        args += ["--steps", "2000", "--screen-steps", "100", "--conc-steps", "200"]
    subprocess.run(args, check=True, capture_output=True, text=True, cwd=str(ROOT))
    data = json.loads(Path(out_path).read_text())
    os.unlink(out_path)
    plain = data["plain"]
    return {
        "small": plain["step_small_sync"],
        "frame": plain["step_atari_rgb_list_sync"],
        "cold_start_s": plain["server_cold_start_s"],
        "import_s": import_time(oe_python, "openenv.core", runs=3),
        "version": data["meta"]["openenv_core"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--frame-steps", type=int, default=1000)
    ap.add_argument("--oe-python", default="/tmp/oe-venv/bin/python")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.steps, args.frame_steps = 500, 100

    ours: dict = {}
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_steps=10**9)
    ours["small"] = time_steps(env, {"message": "hello world"}, args.steps)
    env.close()
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_steps=10**9, frame_shape=[210, 160, 3])
    ours["frame"] = time_steps(env, {"message": "s"}, args.frame_steps)
    env.close()
    ours["import_s"] = import_time(sys.executable, "openenv_gym")
    ours["cold_start_s"] = cold_start()
    ref = reference(args.oe_python, args.quick)

    print(f"# openenv_gym core benchmark (python {sys.version.split()[0]}, {os.cpu_count()} cpus)")
    print("| measure | openenv_gym | openenv-core | ours / reference | target |")
    print("|---|---|---|---|---|")

    def row(name: str, a: float, b: float | None, unit: str, target: str) -> None:
        ratio = f"{a / b:.3f}" if b else "n/a"
        bb = f"{b:.3f} {unit}" if b is not None else "not measured"
        print(f"| {name} | {a:.3f} {unit} | {bb} | {ratio} | {target} |")

    r = ref or {}
    row("small step, median", ours["small"]["median_ms"], r.get("small", {}).get("median_ms"), "ms", "≤ 0.2")
    row("small step, p99", ours["small"]["p99_ms"], r.get("small", {}).get("p99_ms"), "ms", "")
    row("210×160×3 frame step, median", ours["frame"]["median_ms"],
        r.get("frame", {}).get("median_ms"), "ms", "≤ 0.05")
    row("210×160×3 frame step, p99", ours["frame"]["p99_ms"], r.get("frame", {}).get("p99_ms"), "ms", "")
    row("import time", ours["import_s"], r.get("import_s"), "s", "ours ≤ 0.3 s")
    row("cold start (a trainer's first worker → first reset)", ours["cold_start_s"], r.get("cold_start_s"), "s", "ours ≤ 0.5 s")
    if ref:
        print(f"\nreference: openenv-core {ref['version']} (its sync client over WebSocket; "
              "frame = JSON list of 100,800 ints, as its Atari env sends it)")


if __name__ == "__main__":
    main()
