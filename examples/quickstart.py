"""Quickstart: remote workers, vectorized rollouts, and a short Stable-Baselines3 PPO run.

Starts CartPole-v1 workers on the embedded ``process`` provider (no Docker needed), steps
them as one Gymnasium vector env with random actions, then trains PPO on them through
``openenv_gym.sb3.RemoteVecEnv`` with a live progress display, and prints throughput.

    pip install torch==2.13.0 -e '.[sb3]' && python examples/quickstart.py
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecMonitor

import openenv_gym  # noqa: F401  (registers the OpenEnv/* ids)
from openenv_gym.sb3 import RemoteVecEnv

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--provider", default="process")
parser.add_argument("--num-envs", type=int, default=8)
parser.add_argument("--envs-per-worker", type=int, default=None, help="default: one worker per core")
parser.add_argument("--timesteps", type=int, default=40_000)
args = parser.parse_args()
console = Console()
torch.set_num_threads(1)  # a small MLP: leave the cores to the workers

# 1. Vectorized remote rollouts: plain gym.make_vec, random actions.
start = time.perf_counter()
envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=args.num_envs, env_id="CartPole-v1",
                    provider=args.provider, envs_per_worker=args.envs_per_worker)
console.print(f"[bold]{len(envs.workers)} {envs.provider_name} workers[/] hosting {args.num_envs} "
              f"CartPole-v1 envs, ready in {time.perf_counter() - start:.1f} s")
envs.reset(seed=0)
steps, start = 0, time.perf_counter()
while time.perf_counter() - start < 3.0:
    envs.step(envs.action_space.sample())
    steps += args.num_envs
rollout_rate = steps / (time.perf_counter() - start)
envs.close()
console.print(f"random-action rollouts: [bold]{rollout_rate:,.0f}[/] env-steps/s")

# 2. PPO on the same kind of remote envs, with a live progress display.
venv = VecMonitor(RemoteVecEnv("OpenEnv/Gym-v0", args.num_envs, env_id="CartPole-v1",
                               provider=args.provider, envs_per_worker=args.envs_per_worker))
venv.seed(0)


class Live(BaseCallback):
    """Advances a rich progress bar and shows the recent mean episode return."""

    def __init__(self, progress: Progress, task: int) -> None:
        super().__init__()
        self.progress, self.task = progress, task
        self.returns: list[float] = []

    def _on_step(self) -> bool:
        self.returns += [i["episode"]["r"] for i in self.locals["infos"] if "episode" in i]
        mean = np.mean(self.returns[-20:]) if self.returns else 0.0
        self.progress.update(self.task, completed=self.num_timesteps,
                             info=f"episodes {len(self.returns):4d}  mean return {mean:6.1f}")
        return True


model = PPO("MlpPolicy", venv, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
            n_epochs=20, learning_rate=1e-3, seed=0, device="cpu")
columns = (TextColumn("PPO"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
           TextColumn("{task.fields[info]}"))
with Progress(*columns, console=console) as progress:
    task = progress.add_task("train", total=args.timesteps, info="")
    live = Live(progress, task)
    start = time.perf_counter()
    model.learn(args.timesteps, callback=live)
    train_time = time.perf_counter() - start
venv.close()

mean = np.mean(live.returns[-20:]) if live.returns else 0.0
console.print(f"trained {model.num_timesteps:,} steps in {train_time:.0f} s "
              f"([bold]{model.num_timesteps / train_time:,.0f}[/] env-steps/s incl. learning); "
              f"mean return of the last 20 episodes: [bold]{mean:.0f}[/] (CartPole-v1 caps at 500)")
