"""PPO on 8 remote FinRL-v0 envs: train on 2009–2015, trade 2016-01-04..2020-05-08.

The agent trades skfolio's 20 S&P 500 stocks (offline data) with FinRL's StockTradingEnv
rules ($1M, hmax 100 shares, 0.1% costs). Afterwards it prints Sharpe, cumulative return
and max drawdown on the trade period for:

- the PPO agent (deterministic actions, one remote env);
- equal-weight buy-and-hold run through the same env (same data and costs; hmax raised
  so the first step can buy the whole position; never liquidated by --turbulence-threshold,
  which would leave it in cash);
- the S&P 500 index (skfolio's ``sp500_index`` series, which ships offline).

The default run is short (about a minute on 2 cores) and shows the pipeline, not a
trained trader. The full run: ``--timesteps 1000000`` (FinRL's tutorials train PPO for
50k–1M steps). Whatever the numbers are, they are printed as they come out; a short run
usually trails buy-and-hold.

Run:
    python examples/sb3_ppo_finrl.py                      # short run
    python examples/sb3_ppo_finrl.py --timesteps 1000000  # full run
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers OpenEnv/FinRL-v0)
from openenv_gym.envs.finrl.baselines import equal_weight_action
from openenv_gym.envs.finrl.data import SPLITS, load_sp500_index
from openenv_gym.envs.finrl.metrics import summarize


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timesteps", type=int, default=8192, help="PPO training steps")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--envs-per-worker", type=int, default=4,
                        help="sub-envs per worker process/container (8 envs / 4 = 2 workers)")
    parser.add_argument("--provider", default="process", help="process, docker, ray or auto")
    parser.add_argument("--turbulence-threshold", type=float, default=None,
                        help="the PPO agent liquidates at or above this turbulence while trading "
                             "(FinRL's tutorials use 70; default: off)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def run_episode(env: gym.Env, policy) -> dict:
    obs, _ = env.reset(seed=0)
    terminated = truncated = False
    first = True
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(policy(obs, first))
        first = False
    return info


def main() -> None:
    args = parse_args()
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from openenv_gym.sb3 import RemoteVecEnv

    started = time.perf_counter()
    train = RemoteVecEnv("OpenEnv/FinRL-v0", num_envs=args.num_envs, provider=args.provider,
                         envs_per_worker=args.envs_per_worker, split="train")
    # Cash is ~1e6 while indicators are ~1: normalizing observations (not rewards) lets a
    # small MLP learn at all. The statistics are frozen and reused for trading.
    venv = VecNormalize(VecMonitor(train), norm_obs=True, norm_reward=False, clip_obs=10.0)
    model = PPO("MlpPolicy", venv, n_steps=256, batch_size=256, learning_rate=2.5e-4,
                ent_coef=0.01, seed=args.seed, device="cpu", verbose=0)
    try:
        model.learn(args.timesteps)
    finally:
        venv.close()
    train_seconds = time.perf_counter() - started
    venv.training = False

    def agent(obs: np.ndarray, first: bool) -> np.ndarray:
        action, _ = model.predict(venv.normalize_obs(obs[None])[0], deterministic=True)
        return action

    rows: list[tuple[str, dict]] = []
    trade = gym.make("OpenEnv/FinRL-v0", provider=args.provider, split="trade",
                     turbulence_threshold=args.turbulence_threshold)
    try:
        rows.append(("PPO agent", run_episode(trade, agent)))
    finally:
        trade.close()
    bh_env = gym.make("OpenEnv/FinRL-v0", provider=args.provider, split="trade", hmax=100_000)
    try:
        n_stocks, hmax = bh_env.action_space.shape[0], 100_000
        hold = np.zeros(n_stocks, dtype=np.float32)
        rows.append(("Equal-weight buy & hold (env)", run_episode(
            bh_env, lambda obs, first: equal_weight_action(obs, n_stocks, hmax, 0.001) if first else hold)))
    finally:
        bh_env.close()
    start, end = SPLITS["trade"]
    index = load_sp500_index().loc[start:end].to_numpy()
    rows.append(("S&P 500 index (skfolio)", summarize(index)))

    print(f"\nPPO, {args.timesteps:,} steps on {args.num_envs} remote envs ({args.provider}), "
          f"trained in {train_seconds:.0f} s; trade period {start}..{end}")
    print(f"{'strategy':<32}{'Sharpe':>8}{'cum. return':>13}{'max drawdown':>14}{'trades':>8}")
    for name, m in rows:
        trades = f"{m['n_trades']:>8}" if "n_trades" in m else f"{'-':>8}"
        print(f"{name:<32}{m['sharpe']:>8.2f}{m['cumulative_return']:>12.1%}{m['max_drawdown']:>14.1%}{trades}")


if __name__ == "__main__":
    main()
