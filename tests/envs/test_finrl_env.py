"""FinRL-v0 as a Gymnasium env: API checks, buy-and-hold, rendering, and remote workers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("skfolio")
pytest.importorskip("stockstats")

import openenv_gym  # noqa: E402,F401
from openenv_gym.envs.finrl.baselines import equal_weight_action, equal_weight_curve  # noqa: E402
from openenv_gym.envs.finrl.env import FinRLEnv  # noqa: E402

TICKERS = ["AAPL", "JPM", "KO", "XOM"]


def test_passes_gymnasium_env_checker() -> None:
    from gymnasium.utils.env_checker import check_env

    env = FinRLEnv(split="trade", tickers=TICKERS, render_mode="rgb_array")
    check_env(env, skip_render_check=False)


def test_buy_and_hold_through_env_matches_equal_weight_within_costs() -> None:
    cost, initial = 0.001, 1_000_000.0
    env = FinRLEnv(split="trade", hmax=100_000, initial_amount=initial, buy_cost_pct=cost,
                   sell_cost_pct=cost)
    obs, _ = env.reset(seed=0)
    action = equal_weight_action(obs, env.n_stocks, env.hmax, cost)
    terminated, steps, hold = False, 0, np.zeros(env.n_stocks, dtype=np.float32)
    while not terminated:
        obs, _, terminated, truncated, info = env.step(action if steps == 0 else hold)
        assert not truncated
        steps += 1
    assert steps == env.n_days - 1
    assert info["n_trades"] == env.n_stocks  # one buy each, never another order
    close = env.data.close
    reference = equal_weight_curve(close, initial)[-1] / initial - 1.0
    assert info["buy_and_hold_return"] == pytest.approx(reference)
    # Only the buy cost and the fraction of a share per stock left in cash separate them.
    tolerance = (1 + reference) * cost + close[-1].sum() / initial
    assert abs(info["cumulative_return"] - reference) <= tolerance
    assert info["cumulative_return"] < reference  # costs are paid, never gained
    assert info["costs"] == pytest.approx(cost * float(close[0] @ np.array(info["holdings"])))


def test_episode_end_info_and_render() -> None:
    env = FinRLEnv(start="2016-01-04", end="2016-03-31", tickers=TICKERS, render_mode="rgb_array")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated, values = False, [env.initial_amount]
    while not terminated:
        _, _, terminated, _, info = env.step(rng.uniform(-1, 1, len(TICKERS)).astype(np.float32))
        values.append(info["total_asset"])
    for key in ("total_asset", "cumulative_return", "sharpe", "max_drawdown", "n_trades", "costs"):
        assert key in info
    assert info["cumulative_return"] == pytest.approx(values[-1] / values[0] - 1)
    assert 0 <= info["max_drawdown"] < 1 and info["n_trades"] > 0 and info["costs"] > 0
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (320, 640, 3)
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 10  # curves were drawn
    assert FinRLEnv(tickers=TICKERS).render() is None


def test_remote_env_equals_local(provider: str) -> None:
    local = FinRLEnv(split="trade", tickers=TICKERS)
    remote = gym.make("OpenEnv/FinRL-v0", provider=provider, split="trade", tickers=TICKERS,
                      render_mode="rgb_array")
    try:
        assert remote.observation_space == local.observation_space
        assert remote.action_space == local.action_space
        a, _ = local.reset(seed=3)
        b, _ = remote.reset(seed=3)
        np.testing.assert_array_equal(a, b)
        rng = np.random.default_rng(0)
        for _ in range(60):
            action = rng.uniform(-1, 1, len(TICKERS)).astype(np.float32)
            la = local.step(action)
            ra = remote.step(action)
            np.testing.assert_array_equal(la[0], ra[0])
            assert la[1:4] == ra[1:4]
            assert la[4]["holdings"] == ra[4]["holdings"]
        assert remote.render().shape == (320, 640, 3)
        assert remote.unwrapped.state()["n_trades"] == local.book.trades
    finally:
        remote.close()


def test_make_vec(provider: str) -> None:
    pytest.importorskip("openenv_gym.vector.env")
    envs = gym.make_vec("OpenEnv/FinRL-v0", num_envs=2, provider=provider, split="trade",
                        tickers=TICKERS, envs_per_worker=2)
    try:
        obs, _ = envs.reset(seed=0)
        assert obs.shape == (2, 1 + 2 * 4 + 8 * 4) and obs.dtype == np.float32
        actions = np.stack([np.ones(4, np.float32), -np.ones(4, np.float32)])
        obs, rewards, terminations, truncations, infos = envs.step(actions)
        assert obs[0, 5:9].tolist() == [100, 100, 100, 100]  # env 0 bought hmax of each
        assert obs[1, 5:9].tolist() == [0, 0, 0, 0]  # env 1 had nothing to sell
        assert rewards[1] == 0.0 and not terminations.any() and not truncations.any()
    finally:
        envs.close()


def test_sb3_ppo_learns_through_remote_vec_env(provider: str) -> None:
    sb3_vec = pytest.importorskip("openenv_gym.sb3")
    from stable_baselines3 import PPO

    vec = sb3_vec.RemoteVecEnv("OpenEnv/FinRL-v0", num_envs=2, provider=provider,
                               start="2016-01-04", end="2016-06-30", tickers=TICKERS)
    try:
        model = PPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(256)
        assert model.num_timesteps >= 256
        obs = vec.reset()
        actions, _ = model.predict(obs, deterministic=True)
        assert actions.shape == (2, 4)
    finally:
        vec.close()
