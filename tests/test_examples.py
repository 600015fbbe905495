"""The Stable-Baselines3 examples run as a user runs them, with short settings, so they cannot
rot unnoticed. (The RLlib and TRL examples have tests of their own: tests/rllib, tests/trl.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NUMBER = r"-?[\d,]+(?:\.\d+)?"


def _run(script: str, *args: str) -> str:
    out = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True,
                         text=True, timeout=280, env=dict(os.environ, COLUMNS="200"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def test_quickstart_steps_and_trains() -> None:
    out = _run("quickstart.py", "--num-envs", "4", "--timesteps", "1024")
    assert re.search(r"\d+ process workers hosting 4 CartPole-v1 envs", out), out
    assert re.search(rf"random-action rollouts: {NUMBER} env-steps/s", out), out
    assert re.search(rf"trained 1,024 steps in \d+ s \({NUMBER} env-steps/s", out), out


def test_sb3_ppo_cartpole_reaches_its_target() -> None:
    # Exit 0 only at a mean return >= 400 over the last 20 episodes (seed 1: ~17k steps).
    out = _run("sb3_ppo_cartpole.py", "--num-envs", "8", "--total-timesteps", "100000")
    mean = float(re.search(r"mean return of the last 20 episodes: ([\d.]+)", out).group(1))
    assert mean >= 400, out


def test_sb3_ppo_atari_smoke_run() -> None:
    out = _run("sb3_ppo_atari.py", "--num-envs", "2", "--timesteps", "256")
    assert re.search(rf"PPO CnnPolicy on remote pong \(2 envs, process\): 256 steps in \d+ s", out), out


def test_sb3_ppo_finrl_prints_the_three_strategies() -> None:
    out = _run("sb3_ppo_finrl.py", "--num-envs", "4", "--envs-per-worker", "2", "--timesteps", "1024")
    assert "trade period 2016-01-04..2020-05-08" in out, out
    for row in ("PPO agent", "Equal-weight buy & hold (env)", "S&P 500 index (skfolio)"):
        assert re.search(rf"^{re.escape(row)}\s+{NUMBER}\s+{NUMBER}%\s+{NUMBER}%", out, re.M), out


def test_sb3_ppo_finrl_buy_and_hold_is_never_liquidated() -> None:
    # --turbulence-threshold is the agent's risk control: the buy & hold row stays invested
    # (one buy per stock, 20 trades) instead of being sold off on the first turbulent day.
    out = _run("sb3_ppo_finrl.py", "--num-envs", "2", "--envs-per-worker", "2", "--timesteps", "512",
               "--turbulence-threshold", "100")
    row = re.search(rf"^Equal-weight buy & hold \(env\)\s+{NUMBER}\s+{NUMBER}%\s+{NUMBER}%\s+(\d+)$", out, re.M)
    assert row and int(row.group(1)) == 20, out
