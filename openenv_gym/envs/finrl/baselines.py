"""Reference strategies on FinRL-v0's data: equal-weight buy-and-hold, analytically and as actions.

Importing this costs only numpy, so a trainer can use it next to a remote env.

Example:
    >>> import numpy as np
    >>> close = np.array([[10.0, 20.0], [11.0, 18.0]])
    >>> equal_weight_curve(close, 1000.0).tolist()
    [1000.0, 1000.0]
    >>> obs = np.array([1000.0, 10.0, 20.0, 0.0, 0.0], dtype=np.float32)
    >>> (equal_weight_action(obs, n_stocks=2, hmax=100, buy_cost=0.0) * 100).astype(int).tolist()
    [50, 25]
"""

from __future__ import annotations

import numpy as np

__all__ = ["equal_weight_curve", "equal_weight_action"]


def equal_weight_curve(close: np.ndarray, initial_amount: float) -> np.ndarray:
    """Value of equal dollar amounts bought at the first close and held (no costs, fractional shares).

    Args:
        close: ``(T, D)`` closes.
        initial_amount: Dollars at the start.

    Returns:
        ``(T,)`` portfolio values.
    """
    close = np.asarray(close, dtype=np.float64)
    return initial_amount * (close / close[0]).mean(axis=1)


def equal_weight_action(obs: np.ndarray, n_stocks: int, hmax: int, buy_cost: float) -> np.ndarray:
    """The FinRL-v0 action that spends the cash in equal dollar parts (whole shares, with costs).

    Use it on the first observation of an episode and step with zeros afterwards to hold.
    The shares are capped at ``hmax`` (the env's per-step limit), so give the env an
    ``hmax`` at least as large as the biggest position.

    Args:
        obs: A FinRL-v0 observation: ``[cash, closes..., holdings..., indicators...]``.
        n_stocks: D, the number of stocks.
        hmax: The env's ``hmax``.
        buy_cost: The env's ``buy_cost_pct``.

    Returns:
        ``(D,)`` float32 action in [0, 1].
    """
    cash = float(obs[0])
    prices = np.asarray(obs[1: 1 + n_stocks], dtype=np.float64)
    shares = np.floor(cash / n_stocks / (prices * (1.0 + buy_cost)))
    # Half a share of slack: the env truncates action * hmax, and float32 may land just below.
    return np.clip((np.minimum(shares, hmax) + 0.5) / hmax, 0.0, 1.0).astype(np.float32)
