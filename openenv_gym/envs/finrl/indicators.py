"""FinRL's technical indicators (through stockstats) and its turbulence index (numpy).

FinRL's default indicator set is ``macd, boll_ub, boll_lb, rsi_30, cci_30, dx_30,
close_30_sma, close_60_sma``. Two of them read the high and low of the day: ``cci_30``
(typical price ``(high + low + close) / 3``) and ``dx_30`` (directional movement and true
range). When only closes exist (the default skfolio dataset) high = low = open = close is
used, which makes ``cci_30`` a CCI of closes and ``dx_30`` a DX of close-to-close moves.

Example:
    >>> import numpy as np
    >>> close = 100 * np.cumprod(1 + np.random.default_rng(0).normal(0, 0.01, (300, 3)), axis=0)
    >>> compute_indicators({"close": close[:, 0]}, ("macd", "rsi_30")).shape
    (300, 2)
    >>> turbulence(close).shape
    (300,)
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from openenv_gym.errors import InvalidDataError

__all__ = ["DEFAULT_INDICATORS", "TURBULENCE_WINDOW", "compute_indicators", "turbulence"]

#: FinRL's ``INDICATORS`` (finrl/config.py).
DEFAULT_INDICATORS: tuple[str, ...] = (
    "macd", "boll_ub", "boll_lb", "rsi_30", "cci_30", "dx_30", "close_30_sma", "close_60_sma",
)
#: Trading days of history behind each turbulence value (FinRL: one year, 252).
TURBULENCE_WINDOW = 252
# Bytes of (D, D) matrices turbulence() works on at once (a few such arrays are alive).
_CHUNK_BYTES = 16 << 20


def compute_indicators(ohlcv: Mapping[str, np.ndarray], names: Sequence[str]) -> np.ndarray:
    """Compute stockstats indicators of one ticker's daily series.

    Args:
        ohlcv: Arrays of equal length; ``close`` is required, ``open``/``high``/``low``
            default to the close and ``volume`` to NaN (close-only data).
        names: stockstats indicator names (``"macd"``, ``"rsi_30"``, ...).

    Returns:
        ``(T, len(names))`` float64; warm-up gaps are filled forward then backward, as
        FinRL's ``FeatureEngineer`` does, and anything still missing becomes 0.
    """
    import pandas as pd
    import stockstats

    close = np.asarray(ohlcv["close"], dtype=np.float64)
    frame = pd.DataFrame({
        "open": ohlcv.get("open", close), "high": ohlcv.get("high", close),
        "low": ohlcv.get("low", close), "close": close,
        "volume": ohlcv.get("volume", np.full_like(close, np.nan)),
    })
    wrapped = stockstats.wrap(frame)
    columns = {}
    for name in names:
        try:
            columns[name] = wrapped[name]
        except Exception as exc:  # stockstats raises KeyError/ValueError/... for unknown names
            raise InvalidDataError(f"indicator {name!r} is neither a column of the data nor a stockstats "
                                   f"indicator ({type(exc).__name__}: {exc}); FinRL's defaults are "
                                   f"{', '.join(DEFAULT_INDICATORS)}") from None
    out = pd.DataFrame(columns, index=frame.index)
    out = out.replace([np.inf, -np.inf], np.nan).ffill().bfill().fillna(0.0)
    return out.to_numpy(dtype=np.float64)


def turbulence(close: np.ndarray, window: int = TURBULENCE_WINDOW) -> np.ndarray:
    """FinRL's turbulence index: squared Mahalanobis distance of today's returns.

    For day ``t >= window`` it is ``(r_t - mu)^T pinv(S) (r_t - mu)`` where ``mu`` and
    ``S`` are the mean and covariance of daily returns over the previous ``window`` days
    (FinRL's ``calculate_turbulence``); the first ``window`` days are 0. Rolling sums make
    it a vectorized pass (in chunks of days, so memory stays bounded) instead of FinRL's
    per-day pandas loop. Unlike FinRL, the first
    two positive values are not zeroed (a start-up quirk of its loop).

    Args:
        close: ``(T, D)`` closes (or any positive prices).
        window: Days of history.

    Returns:
        ``(T,)`` float64, non-negative.
    """
    close = np.asarray(close, dtype=np.float64)
    n_days = close.shape[0]
    out = np.zeros(n_days)
    if n_days <= window:  # day `window` is the first with a full history behind it
        return out
    returns = close[1:] / close[:-1] - 1.0  # returns[j] is the return of day j + 1
    n_stocks = returns.shape[1]
    # Day t (>= window) uses the returns of days max(1, t - window) .. t - 1: day 0 has none.
    days = np.arange(window, n_days)
    lo = np.maximum(days - window, 1) - 1
    hi = days - 1
    # Days go in chunks of about _CHUNK_BYTES of (D, D) matrices: memory stays O(chunk x D^2),
    # not O(T x D^2) (a 500-stock, 10-year file would need tens of GB at once).
    chunk = max(1, _CHUNK_BYTES // (8 * n_stocks * n_stocks))
    for a in range(0, len(days), chunk):
        b = min(a + chunk, len(days))
        # Exact sums for the chunk's first day, then one row in (and at most one out) per day.
        first = returns[lo[a]:hi[a]]
        k = np.arange(a + 1, b)
        added = returns[hi[k] - 1]
        removed = returns[lo[k] - 1] * (lo[k] > lo[k - 1])[:, None]
        s1 = np.concatenate([first.sum(axis=0)[None], added - removed])
        s2 = np.concatenate([(first.T @ first)[None], added[:, :, None] * added[:, None, :]
                             - removed[:, :, None] * removed[:, None, :]])
        np.cumsum(s1, axis=0, out=s1)
        np.cumsum(s2, axis=0, out=s2)
        count = (hi[a:b] - lo[a:b]).astype(np.float64)[:, None]
        mean = s1 / count
        cov = (s2 - count[:, :, None] * mean[:, :, None] * mean[:, None, :]) / (count[:, :, None] - 1)
        dev = returns[days[a:b] - 1] - mean
        dist = np.einsum("ti,tij,tj->t", dev, np.linalg.pinv(cov, hermitian=True), dev)
        out[days[a:b]] = np.maximum(dist, 0.0)
    return out
