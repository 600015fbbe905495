"""FinRL-v0: FinRL's ``StockTradingEnv`` on real daily prices, as a numeric Gymnasium env.

Observation (float32): ``[cash] + D closes + D holdings + K×D indicators`` (indicator-major,
as FinRL builds its state). Action: ``Box(-1, 1, (D,))``; ``trunc(action * hmax)`` shares
per stock, sells before buys (see :mod:`.accounting`). Reward: change in total asset value
over the step × ``reward_scaling``. When the day's turbulence is at or above
``turbulence_threshold`` every position is sold and nothing is bought. An episode walks the
window's days once: ``T - 1`` steps, the last one ``terminated``.

Example:
    >>> env = FinRLEnv(split="trade", tickers=["AAPL", "JPM"])
    >>> obs, info = env.reset(seed=0)
    >>> obs.shape, obs.dtype
    ((21,), dtype('float32'))
    >>> obs, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
    >>> info["holdings"]
    [100, 0]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from gymnasium import spaces

from openenv_gym._numbers import is_finite, is_int
from openenv_gym.envs.base import Environment
from openenv_gym.envs.finrl.accounting import Portfolio
from openenv_gym.envs.finrl.baselines import equal_weight_curve
from openenv_gym.envs.finrl.data import MarketData, load_market_data
from openenv_gym.envs.finrl.indicators import DEFAULT_INDICATORS
from openenv_gym.envs.finrl.metrics import summarize
from openenv_gym.errors import InvalidDataError, ResetNeededError
from openenv_gym.models import State

__all__ = ["FinRLEnv"]

#: Relative slack within which ``action * hmax`` counts as the whole number just above it.
_SNAP = 4 * float(np.finfo(np.float32).eps)


def _shares(action: np.ndarray, hmax: int) -> np.ndarray:
    """``trunc(action * hmax)`` whole shares per stock, the action clipped to [-1, 1].

    A product within float32 resolution below a whole number counts as it: an agent's
    float32 ``k / hmax`` (``float32(0.29) = 0.2899999917``) means k shares, not k - 1
    (FinRL multiplies in float32, which rounds most of these to k as well). Scaling by
    ``1 + _SNAP`` does that in one multiply (a share count per step is about as cheap as
    without it); the clip after it keeps ``|shares| <= hmax``.

    Example:
        >>> _shares(np.array([0.29, -0.29, 0.2999, 1.5], dtype=np.float32), 100)
        array([ 29, -29,  29, 100])
    """
    scaled = np.asarray(action, dtype=np.float64) * (hmax * (1.0 + _SNAP))
    np.clip(scaled, -hmax, hmax, out=scaled)
    return scaled.astype(np.int64)  # truncates toward zero


class FinRLEnv(Environment):
    """Multi-stock daily trading with FinRL's semantics.

    Args:
        split: ``"train"`` (2009-01-01..2015-12-31), ``"trade"`` (2016-01-04..2020-05-08),
            None (all days) or ``"auto"`` (default): ``"train"`` for the offline set, all days
            of a ``data_path`` file.
        start: First day, ISO (``"2016-01-04"``, ``20160104``) or a date (overrides the split's).
        end: Last day, as ``start``, inclusive (overrides the split's).
        tickers: Stocks to trade, in this order, each once (default: all; skfolio's set has
            20); a bare string is one ticker.
        data_path: A CSV/Parquet in FinRL's long format instead of the offline S&P 500 set.
        hmax: Most shares one step buys or sells per stock (FinRL tutorial: 100).
        initial_amount: Starting cash (FinRL tutorial: 1,000,000).
        buy_cost_pct: Buy cost as a fraction of value (0.001 = 0.1%).
        sell_cost_pct: Sell cost as a fraction of value.
        reward_scaling: Factor on the dollar change of total assets (FinRL tutorial: 1e-4).
        turbulence_threshold: Liquidate and stop buying at or above it; None disables it.
        indicators: Indicator names (stockstats names or columns of the user file); a bare
            string is one indicator.
        render_mode: ``"rgb_array"`` for the value chart.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, split: str | None = "auto", start: str | None = None, end: str | None = None,
                 tickers: Sequence[str] | None = None, data_path: str | None = None, hmax: int = 100,
                 initial_amount: float = 1_000_000.0, buy_cost_pct: float = 0.001,
                 sell_cost_pct: float = 0.001, reward_scaling: float = 1e-4,
                 turbulence_threshold: float | None = None,
                 indicators: str | Sequence[str] = DEFAULT_INDICATORS,
                 render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        if not is_int(hmax, 1):  # 1.9 was traded as 1 share a step, without a word
            raise InvalidDataError(f"hmax must be a whole number of shares >= 1, got {hmax!r}")
        for name, value in (("initial_amount", initial_amount),
                            ("buy_cost_pct", buy_cost_pct), ("sell_cost_pct", sell_cost_pct),
                            ("reward_scaling", reward_scaling)):
            if not is_finite(value):
                # NaN or inf cash makes the first observation NaN; a NaN scaling every reward.
                raise InvalidDataError(f"{name} must be a finite number, got {value!r}")
        if turbulence_threshold is not None and not is_finite(turbulence_threshold):
            raise InvalidDataError(f"turbulence_threshold must be a finite number (liquidate at or "
                                   f"above it) or None (off), got {turbulence_threshold!r}")
        if initial_amount <= 0:
            raise InvalidDataError(f"initial_amount must be > 0, got {initial_amount}")
        if not (0 <= buy_cost_pct < 1 and 0 <= sell_cost_pct < 1):
            raise InvalidDataError(f"costs must be fractions in [0, 1), got {buy_cost_pct}, {sell_cost_pct}")
        # Turbulence only matters with a threshold: without one it is not computed.
        self.data: MarketData = load_market_data(split, start, end, tickers, data_path, indicators,
                                                 with_turbulence=turbulence_threshold is not None)
        self.hmax = int(hmax)
        self.initial_amount = float(initial_amount)
        self.buy_cost_pct = float(buy_cost_pct)
        self.sell_cost_pct = float(sell_cost_pct)
        self.reward_scaling = float(reward_scaling)
        self.turbulence_threshold = None if turbulence_threshold is None else float(turbulence_threshold)
        n_days, n_stocks = self.data.close.shape
        self.n_stocks = n_stocks
        self.n_days = n_days
        self.tickers = list(self.data.tickers)
        self.action_space = spaces.Box(-1.0, 1.0, (n_stocks,), np.float32)
        size = 1 + 2 * n_stocks + len(self.data.indicator_names) * n_stocks
        self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        # Flattened once: reset and step only copy rows out of these.
        self._features = self.data.indicators.reshape(n_days, -1).astype(np.float32)
        self._benchmark = equal_weight_curve(self.data.close, self.initial_amount)
        self._values = np.empty(n_days)
        # Before the first reset the env stands on day 0 with all cash, as after one: state()
        # and render() (a vector env's, which no order check guards) read this value.
        self._values[0] = self.initial_amount
        self._obs = np.empty(size, dtype=np.float32)
        self.day = 0
        self.book = Portfolio(self.initial_amount, np.zeros(n_stocks, dtype=np.int64))

    # -- Gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start at the window's first day with all cash and no shares.

        Returns:
            ``(observation, info)``; info has ``date`` and ``total_asset``.
        """
        super().reset(seed=seed)  # the dynamics are deterministic; seeding only np_random
        self.day = 0
        self.book = Portfolio(self.initial_amount, np.zeros(self.n_stocks, dtype=np.int64))
        self._values[0] = self.initial_amount
        return self._observe(), {"date": str(self.data.dates[0]), "total_asset": self.initial_amount}

    def step(self, action: np.ndarray):
        """Trade at today's closes, move to the next day, and mark the portfolio to it.

        Returns:
            ``(observation, reward, terminated, truncated, info)``; info has ``date``,
            ``total_asset``, ``holdings`` and ``turbulent``; at the episode's end also
            ``cumulative_return``, ``sharpe``, ``max_drawdown``, ``n_trades``, ``costs``
            and ``buy_and_hold_return``.

        Raises:
            ResetNeededError: The episode is over (a server refuses such a step before it
                gets here; a local env raises it itself).
        """
        if self.day >= self.n_days - 1:
            raise ResetNeededError("the episode is over (its last day was reached); call reset()")
        prices = self.data.close[self.day]
        begin = self.book.value(prices)
        orders = _shares(action, self.hmax)
        turbulent = (self.turbulence_threshold is not None
                     and self.data.turbulence[self.day] >= self.turbulence_threshold)
        self.book.execute(prices, orders, self.buy_cost_pct, self.sell_cost_pct,
                          liquidate=turbulent)
        self.day += 1
        end = self.book.value(self.data.close[self.day])
        self._values[self.day] = end
        terminated = self.day == self.n_days - 1
        info: dict[str, Any] = {"date": str(self.data.dates[self.day]), "total_asset": end,
                                "holdings": self.book.holdings.tolist(), "turbulent": bool(turbulent)}
        if terminated:
            info.update(self.episode_summary())
        return self._observe(), (end - begin) * self.reward_scaling, terminated, False, info

    def render(self) -> np.ndarray | None:
        """The chart of portfolio value vs. equal-weight buy-and-hold so far (rgb_array)."""
        if self.render_mode != "rgb_array":
            return None
        from openenv_gym.envs.finrl.render import chart

        return chart(self.data.dates, self._values[: self.day + 1], self._benchmark,
                     title=f"FinRL-v0 {self.data.dates[0]}..{self.data.dates[-1]} ({self.n_stocks} stocks)")

    def state(self) -> State:
        return State(date=str(self.data.dates[self.day]), day=self.day, cash=self.book.cash,
                     holdings=self.book.holdings.tolist(), tickers=self.tickers,
                     total_asset=float(self._values[self.day]), costs=self.book.costs,
                     n_trades=self.book.trades)

    # -- helpers ---------------------------------------------------------------------------
    def episode_summary(self) -> dict[str, Any]:
        """Figures of the episode so far: total asset, return, Sharpe, drawdown, trades, costs."""
        values = self._values[: self.day + 1]
        return {"total_asset": float(values[-1]), **summarize(values), "n_trades": self.book.trades,
                "costs": self.book.costs,
                "buy_and_hold_return": float(self._benchmark[self.day] / self._benchmark[0] - 1.0)}

    def _observe(self) -> np.ndarray:
        d = self.n_stocks
        obs = self._obs
        obs[0] = self.book.cash
        obs[1: 1 + d] = self.data.close[self.day]
        obs[1 + d: 1 + 2 * d] = self.book.holdings
        obs[1 + 2 * d:] = self._features[self.day]
        return obs.copy()
