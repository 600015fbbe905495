"""Performance figures of a portfolio-value series: return, Sharpe, drawdown.

Example:
    >>> import numpy as np
    >>> values = np.array([100.0, 110.0, 99.0, 120.0])
    >>> round(cumulative_return(values), 3), round(max_drawdown(values), 3)
    (0.2, 0.1)
"""

from __future__ import annotations

import numpy as np

__all__ = ["TRADING_DAYS", "cumulative_return", "sharpe_ratio", "max_drawdown", "summarize"]

#: Trading days per year, for annualizing (FinRL and skfolio use 252).
TRADING_DAYS = 252


def cumulative_return(values: np.ndarray) -> float:
    """``values[-1] / values[0] - 1``."""
    return float(values[-1] / values[0] - 1.0)


def sharpe_ratio(values: np.ndarray) -> float:
    """Annualized Sharpe ratio of daily simple returns, zero risk-free rate (FinRL's).

    ``sqrt(252) * mean / std`` with the sample standard deviation; 0 when it is 0 or
    there are fewer than two returns.
    """
    returns = np.diff(values) / values[:-1]
    if returns.size < 2:
        return 0.0
    std = float(returns.std(ddof=1))
    return 0.0 if std == 0.0 else float(np.sqrt(TRADING_DAYS) * returns.mean() / std)


def max_drawdown(values: np.ndarray) -> float:
    """Largest peak-to-trough loss as a positive fraction (0.25 = fell 25% from a peak)."""
    peaks = np.maximum.accumulate(values)
    return float(np.max(1.0 - values / peaks))


def summarize(values: np.ndarray) -> dict[str, float]:
    """``cumulative_return``, ``sharpe`` and ``max_drawdown`` of a value series."""
    values = np.asarray(values, dtype=np.float64)
    return {"cumulative_return": cumulative_return(values), "sharpe": sharpe_ratio(values),
            "max_drawdown": max_drawdown(values)}
