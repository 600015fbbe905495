"""FinRL's order execution: sells before buys, whole shares, proportional costs, cash limits.

This is the bookkeeping of FinRL's ``StockTradingEnv._sell_stock``/``_buy_stock`` without
its quirks: trades count only orders that moved shares (FinRL also counts empty buys),
and nothing reads an indicator as a "can trade" flag.

Example:
    >>> import numpy as np
    >>> book = Portfolio(cash=1000.0, holdings=np.zeros(2, dtype=np.int64))
    >>> book.execute(np.array([10.0, 20.0]), np.array([5, 100]), buy_cost=0.001, sell_cost=0.001)
    array([ 1, 49])
    >>> round(book.cash, 4), book.holdings.tolist(), book.trades
    (9.01, [1, 49], 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Portfolio"]


@dataclass
class Portfolio:
    """Cash, whole-share holdings and the running totals of one episode.

    Attributes:
        cash: Dollars not invested.
        holdings: ``(D,)`` int64 shares held per stock.
        costs: Transaction costs paid so far (dollars).
        trades: Orders that moved at least one share.
    """

    cash: float
    holdings: np.ndarray
    costs: float = 0.0
    trades: int = field(default=0)

    def value(self, prices: np.ndarray) -> float:
        """Total asset value at ``prices``: cash plus holdings marked to market."""
        return float(self.cash + prices @ self.holdings)

    def execute(self, prices: np.ndarray, orders: np.ndarray, buy_cost: float, sell_cost: float,
                liquidate: bool = False) -> np.ndarray:
        """Fill one day's orders at ``prices``.

        Sells go first, largest first, each capped at the shares held; then buys, largest
        first, each capped at what the cash left buys including its cost
        (``cash // (price * (1 + buy_cost))``). When ``liquidate`` (turbulence above the
        threshold) every position is sold and nothing is bought, whatever the orders.

        Args:
            prices: ``(D,)`` prices of the day.
            orders: ``(D,)`` integer share orders: negative sells, positive buys.
            buy_cost: Cost as a fraction of a buy's value (0.001 = 0.1%).
            sell_cost: Cost as a fraction of a sell's value.
            liquidate: Sell everything and buy nothing.

        Returns:
            ``(D,)`` int64 shares actually traded (negative sold, positive bought).
        """
        filled = np.zeros(len(orders), dtype=np.int64)
        if liquidate:
            orders = np.where(self.holdings > 0, -self.holdings, 0)
        # Stable sort keeps FinRL's order for small D (numpy sorts short arrays by insertion).
        ranked = np.argsort(orders, kind="stable")
        for i in ranked[: int(np.count_nonzero(orders < 0))]:
            n = int(min(-orders[i], self.holdings[i]))
            if n > 0 and prices[i] > 0:
                gross = float(prices[i]) * n
                self.cash += gross * (1.0 - sell_cost)
                self.costs += gross * sell_cost
                self.holdings[i] -= n
                self.trades += 1
                filled[i] = -n
        if liquidate:
            return filled
        for i in ranked[::-1][: int(np.count_nonzero(orders > 0))]:
            if prices[i] <= 0:
                continue
            affordable = int(self.cash // (float(prices[i]) * (1.0 + buy_cost)))
            n = min(affordable, int(orders[i]))
            if n > 0:
                gross = float(prices[i]) * n
                self.cash -= gross * (1.0 + buy_cost)
                self.costs += gross * buy_cost
                self.holdings[i] += n
                self.trades += 1
                filled[i] = n
        return filled
