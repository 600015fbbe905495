"""FinRL-v0 bookkeeping, checked against cases computed by hand on a small user CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stockstats")

from openenv_gym.envs.finrl.accounting import Portfolio  # noqa: E402
from openenv_gym.envs.finrl.env import FinRLEnv  # noqa: E402
from openenv_gym.errors import ResetNeededError  # noqa: E402

# Two stocks over four days. The macd column is given, so nothing is computed; the
# turbulence column spikes on day 2 to trigger the liquidation rule.
ROWS = [
    # date, tic, open, high, low, close, volume, macd, turbulence
    ("2021-01-04", "AAA", 10, 10, 10, 10, 1000, 0.1, 0),
    ("2021-01-04", "BBB", 20, 20, 20, 20, 1000, 0.2, 0),
    ("2021-01-05", "AAA", 11, 11, 11, 11, 1000, 0.3, 0),
    ("2021-01-05", "BBB", 19, 19, 19, 19, 1000, 0.4, 0),
    ("2021-01-06", "AAA", 12, 12, 12, 12, 1000, 0.5, 100),
    ("2021-01-06", "BBB", 18, 18, 18, 18, 1000, 0.6, 100),
    ("2021-01-07", "AAA", 10, 10, 10, 10, 1000, 0.7, 0),
    ("2021-01-07", "BBB", 20, 20, 20, 20, 1000, 0.8, 0),
]


def write_csv(path: Path, rows: list[tuple] = ROWS,
              header: str = "date,tic,open,high,low,close,volume,macd,turbulence") -> str:
    path.write_text(header + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    return str(path)


@pytest.fixture
def small_env(tmp_path: Path) -> FinRLEnv:
    return FinRLEnv(split=None, data_path=write_csv(tmp_path / "small.csv"), hmax=10,
                    initial_amount=1000.0, buy_cost_pct=0.01, sell_cost_pct=0.01, reward_scaling=1.0,
                    turbulence_threshold=50.0, indicators=("macd",))


def test_observation_layout_is_cash_closes_holdings_indicators(small_env: FinRLEnv) -> None:
    obs, info = small_env.reset(seed=0)
    assert obs.dtype == np.float32
    np.testing.assert_allclose(obs, [1000, 10, 20, 0, 0, 0.1, 0.2], rtol=1e-6)
    assert info["date"] == "2021-01-04"
    assert small_env.tickers == ["AAA", "BBB"]


def test_hand_computed_buy_sell_costs_and_turbulence_liquidation(small_env: FinRLEnv) -> None:
    small_env.reset(seed=0)
    # Day 0: buy 10 AAA (1.0 * hmax) and 5 BBB (0.55 * 10 = 5.5, truncated) with 1% costs.
    #   cash 1000 - 10*10*1.01 - 5*20*1.01 = 798; value at day-1 closes 798 + 110 + 95 = 1003.
    obs, reward, terminated, _, info = small_env.step(np.array([1.0, 0.55], dtype=np.float32))
    assert info["holdings"] == [10, 5]
    assert obs[0] == pytest.approx(798.0)
    assert reward == pytest.approx(3.0)
    assert small_env.book.costs == pytest.approx(2.0)
    assert not terminated
    # Day 1: sell 3 AAA at 11 (cash + 32.67, cost 0.33), then buy 10 BBB at 19
    #   (cash - 191.90, cost 1.90): cash 638.77; value at day 2: 638.77 + 7*12 + 15*18 = 992.77.
    obs, reward, terminated, _, info = small_env.step(np.array([-0.3, 1.0], dtype=np.float32))
    assert info["holdings"] == [7, 15]
    assert obs[0] == pytest.approx(638.77, abs=1e-3)
    assert reward == pytest.approx(992.77 - 1003.0, abs=1e-6)
    assert small_env.book.costs == pytest.approx(4.23)
    # Day 2: turbulence 100 >= 50: everything is sold whatever the action, nothing bought.
    #   cash 638.77 + 84*0.99 + 270*0.99 = 989.23; that is the final value.
    obs, reward, terminated, truncated, info = small_env.step(np.array([1.0, 1.0], dtype=np.float32))
    assert info["turbulent"] is True
    assert info["holdings"] == [0, 0]
    assert obs[0] == pytest.approx(989.23, abs=1e-3)
    assert reward == pytest.approx(989.23 - 992.77, abs=1e-6)
    assert terminated and not truncated  # 4 days: 3 steps
    assert info["total_asset"] == pytest.approx(989.23)
    assert info["costs"] == pytest.approx(4.23 + 0.84 + 2.70)
    assert info["n_trades"] == 6
    assert info["cumulative_return"] == pytest.approx(989.23 / 1000 - 1)
    values = np.array([1000.0, 1003.0, 992.77, 989.23])
    assert info["max_drawdown"] == pytest.approx(1 - 989.23 / 1003.0)
    returns = np.diff(values) / values[:-1]
    assert info["sharpe"] == pytest.approx(np.sqrt(252) * returns.mean() / returns.std(ddof=1))
    with pytest.raises(ResetNeededError, match="reset"):
        small_env.step(np.zeros(2, dtype=np.float32))


def test_reset_restores_cash_and_clears_holdings(small_env: FinRLEnv) -> None:
    small_env.reset()
    small_env.step(np.array([1.0, 1.0], dtype=np.float32))
    obs, _ = small_env.reset()
    np.testing.assert_allclose(obs[:5], [1000, 10, 20, 0, 0])
    assert small_env.book.costs == 0 and small_env.book.trades == 0


def test_buys_are_capped_by_cash_including_costs() -> None:
    book = Portfolio(cash=100.0, holdings=np.zeros(2, dtype=np.int64))
    # Equal orders: the later ticker goes first (FinRL's reversed argsort). BBB: 100 // 20.2 = 4
    # shares (cash 19.2 left), AAA: 19.2 // 10.1 = 1 share (cash 9.1 left).
    filled = book.execute(np.array([10.0, 20.0]), np.array([10, 10]), buy_cost=0.01, sell_cost=0.01)
    assert filled.tolist() == [1, 4]
    assert book.cash == pytest.approx(9.1)
    assert book.cash >= 0
    # Nothing more is affordable: no fill, no trade counted.
    filled = book.execute(np.array([10.0, 20.0]), np.array([0, 10]), buy_cost=0.01, sell_cost=0.01)
    assert filled.tolist() == [0, 0] and book.trades == 2


def test_sells_are_capped_by_holdings_and_run_before_buys() -> None:
    book = Portfolio(cash=0.0, holdings=np.array([3, 0], dtype=np.int64))
    # The sale of AAA funds the purchase of BBB in the same step.
    filled = book.execute(np.array([10.0, 5.0]), np.array([-100, 10]), buy_cost=0.0, sell_cost=0.0)
    assert filled.tolist() == [-3, 6]
    assert book.holdings.tolist() == [0, 6]
    assert book.cash == pytest.approx(0.0)
    filled = book.execute(np.array([10.0, 5.0]), np.array([-5, 0]), buy_cost=0.0, sell_cost=0.0)
    assert filled.tolist() == [0, 0]  # nothing held: no short selling


def test_no_turbulence_rule_without_threshold(tmp_path: Path) -> None:
    env = FinRLEnv(split=None, data_path=write_csv(tmp_path / "s.csv"), hmax=10, initial_amount=1000.0,
                   indicators=("macd",), turbulence_threshold=None)
    env.reset()
    env.step(np.array([1.0, 0.0], dtype=np.float32))
    env.step(np.zeros(2, dtype=np.float32))
    *_, info = env.step(np.array([0.0, 1.0], dtype=np.float32))  # day 2 is turbulent but ignored
    assert info["holdings"] == [10, 10] and info["turbulent"] is False


@pytest.mark.parametrize("hmax", [100, 1000, 37])
def test_float32_k_over_hmax_trades_k_shares(hmax: int) -> None:
    # SB3 (and the float32 action space) send float32: float32(0.29) * 100 is 28.999999...,
    # which must still mean 29 shares, as trunc(action × hmax) says and FinRL does.
    env = FinRLEnv(split="trade", tickers=["AAPL", "JPM"], hmax=hmax)
    for k in range(1, hmax + 1):
        env.reset(seed=0)
        _, _, _, _, info = env.step(np.array([k / hmax, 0.0], dtype=np.float32))
        assert info["holdings"] == [k, 0], k
        _, _, _, _, info = env.step(np.array([-k / hmax, 0.0], dtype=np.float32))
        assert info["holdings"] == [0, 0], k


def test_actions_between_share_counts_still_truncate() -> None:
    env = FinRLEnv(split="trade", tickers=["AAPL", "JPM"], hmax=100)
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([0.2999, 0.0049], dtype=np.float32))
    assert info["holdings"] == [29, 0]
