"""Market data for FinRL-v0: the offline S&P 500 set or a user file, validated and cached.

The default data is skfolio's ``load_sp500_dataset()``: 20 S&P 500 stocks, daily
adjusted closes 1990-01-02..2022-12-28, shipped inside the skfolio wheel. It has closes
only (see :mod:`.indicators` for what that means for ``cci_30`` and ``dx_30``). A user
file (``data_path=``) is a CSV or Parquet in FinRL's long format: one row per date and
ticker with ``date, tic, open, high, low, close, volume`` and, optionally, indicator
columns (used as given) and ``turbulence``.

Indicators are computed on the whole history of each ticker, then the date window is
cut, so the first days of a window have no warm-up gaps and nothing looks ahead (every
indicator is trailing). All of it is cached per process: a worker loads once, resets are
free.

Example:
    >>> data = load_market_data(split="trade", tickers=("AAPL", "JPM"))
    >>> data.tickers, str(data.dates[0])
    (('AAPL', 'JPM'), '2016-01-04')
    >>> data.close.shape[1], data.indicators.shape[1:]
    (2, (8, 2))
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from openenv_gym.envs.finrl.indicators import DEFAULT_INDICATORS, compute_indicators, turbulence
from openenv_gym.errors import InvalidDataError

__all__ = ["MarketData", "SPLITS", "REQUIRED_COLUMNS", "load_market_data", "read_long_format"]

#: Date windows (inclusive) of the named splits: FinRL's tutorial periods.
SPLITS: dict[str, tuple[str, str]] = {
    "train": ("2009-01-01", "2015-12-31"),
    "trade": ("2016-01-04", "2020-05-08"),
}
#: Columns every row of a user file needs (FinRL's long format).
REQUIRED_COLUMNS: tuple[str, ...] = ("date", "tic", "open", "high", "low", "close", "volume")
_NUMERIC = ("open", "high", "low", "close", "volume")


@dataclass(frozen=True)
class MarketData:
    """Aligned daily arrays for one set of tickers over one date window.

    Attributes:
        dates: ``(T,)`` ``datetime64[D]``.
        tickers: The D tickers, in column order.
        close: ``(T, D)`` float64 closes.
        indicators: ``(T, K, D)`` float64, indicator-major as in FinRL's state.
        indicator_names: The K indicator names.
        turbulence: ``(T,)`` float64 turbulence index.
    """

    dates: np.ndarray
    tickers: tuple[str, ...]
    close: np.ndarray
    indicators: np.ndarray
    indicator_names: tuple[str, ...]
    turbulence: np.ndarray

    def window(self, start: str | None, end: str | None) -> "MarketData":
        """The days between ``start`` and ``end`` (inclusive ISO dates; None: open end)."""
        lo = 0 if start is None else int(np.searchsorted(self.dates, _day(start, "start"), "left"))
        hi = len(self.dates) if end is None else int(np.searchsorted(self.dates, _day(end, "end"), "right"))
        if hi - lo < 2:
            raise InvalidDataError(
                f"the window {start}..{end} holds {max(hi - lo, 0)} trading day(s); an episode needs "
                f"at least 2. The data covers {self.dates[0]}..{self.dates[-1]}")
        return MarketData(self.dates[lo:hi], self.tickers, self.close[lo:hi], self.indicators[lo:hi],
                          self.indicator_names, self.turbulence[lo:hi])


def _day(value: str, what: str) -> np.datetime64:
    try:
        return np.datetime64(str(value), "D")
    except ValueError:
        raise InvalidDataError(f"{what}={value!r} is not an ISO date like '2016-01-04'") from None


def load_market_data(split: str | None = "train", start: str | None = None, end: str | None = None,
                     tickers: Sequence[str] | None = None, data_path: str | None = None,
                     indicators: Sequence[str] = DEFAULT_INDICATORS) -> MarketData:
    """Load (once per process) and window the data an env trades on.

    Args:
        split: ``"train"`` (2009–2015), ``"trade"`` (2016-01-04..2020-05-08) or None (all);
            ``start``/``end`` override its bounds.
        start: First date, ISO (inclusive).
        end: Last date, ISO (inclusive).
        tickers: Subset of tickers, in this order (default: all of the data's).
        data_path: A user CSV/Parquet in FinRL's long format instead of the default set.
        indicators: Indicator names (stockstats names, or columns of the user file).

    Returns:
        The :class:`MarketData` of the window.

    Raises:
        InvalidDataError: Unknown split or ticker, unreadable or malformed file, empty window.
    """
    if split is not None and split not in SPLITS:
        raise InvalidDataError(f"split={split!r} is unknown; use one of {', '.join(SPLITS)} or None "
                               "(or give start=/end= dates)")
    lo, hi = SPLITS[split] if split is not None else (None, None)
    source = _source_key(data_path)
    names = tuple(indicators)
    full = _load_tickers(source, tuple(tickers) if tickers is not None else None, names)
    return full.window(start if start is not None else lo, end if end is not None else hi)


def _source_key(data_path: str | None) -> tuple:
    if data_path is None:
        return ("sp500",)
    path = os.path.abspath(os.path.expanduser(str(data_path)))
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise InvalidDataError(f"data_path {data_path!r} cannot be read: {exc.strerror}") from None
    # mtime and size in the key: an edited file is reloaded, not served stale.
    return (path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _load_tickers(source: tuple, tickers: tuple[str, ...] | None, names: tuple[str, ...]) -> MarketData:
    full = _load_source(source, names)
    if tickers is None:
        chosen = list(range(len(full.tickers)))
    else:
        unknown = [t for t in tickers if t not in full.tickers]
        if unknown or not tickers:
            raise InvalidDataError(f"tickers {unknown or '[]'} are not in the data; available: "
                                   f"{', '.join(full.tickers)}")
        chosen = [full.tickers.index(t) for t in tickers]
    close = full.close[:, chosen]
    # Turbulence depends on the set of stocks, so it is computed after choosing them,
    # unless the user's file brings its own.
    turb = full.turbulence if full.turbulence.size else turbulence(close)
    return MarketData(full.dates, tuple(full.tickers[i] for i in chosen), close,
                      full.indicators[:, :, chosen], names, turb)


@functools.lru_cache(maxsize=4)
def _load_source(source: tuple, names: tuple[str, ...]) -> MarketData:
    if source == ("sp500",):
        return _load_sp500(names)
    return _from_long(read_long_format(source[0]), names, source[0])


def _load_sp500(names: tuple[str, ...]) -> MarketData:
    from skfolio.datasets import load_sp500_dataset

    prices = load_sp500_dataset().sort_index()
    close = prices.to_numpy(dtype=np.float64)
    ind = np.stack([compute_indicators({"close": close[:, j]}, names) for j in range(close.shape[1])],
                   axis=2)
    return MarketData(prices.index.to_numpy().astype("datetime64[D]"), tuple(map(str, prices.columns)),
                      close, ind, names, np.zeros(0))


def read_long_format(path: str):  # -> pandas.DataFrame (pandas loads lazily)
    """Read and validate a FinRL long-format CSV/Parquet.

    Args:
        path: ``.csv`` (optionally ``.gz``) or ``.parquet``/``.pq``.

    Returns:
        A DataFrame sorted by date then ticker, ``date`` as datetime, prices as float.

    Raises:
        InvalidDataError: Names the missing column, or the first bad row (1-based data row,
            as counted below the header) and what is wrong with it.
    """
    import pandas as pd

    lower = path.lower()
    try:
        if lower.endswith((".parquet", ".pq")):
            frame = pd.read_parquet(path)
        elif lower.endswith((".csv", ".csv.gz", ".txt")):
            frame = pd.read_csv(path)
        else:
            raise InvalidDataError(f"data_path {path!r}: use a .csv, .csv.gz or .parquet file")
    except InvalidDataError:
        raise
    except Exception as exc:  # pandas raises many types for unreadable files
        raise InvalidDataError(f"data_path {path!r} cannot be read: {type(exc).__name__}: {exc}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InvalidDataError(
            f"data_path {path!r} lacks column(s) {', '.join(map(repr, missing))}; FinRL's long format "
            f"needs {', '.join(REQUIRED_COLUMNS)} (one row per date and ticker) plus optional "
            f"indicator columns; found {', '.join(frame.columns)}")
    if frame.empty:
        raise InvalidDataError(f"data_path {path!r} has no rows")
    dates = pd.to_datetime(frame["date"], errors="coerce")
    _first_bad(path, frame, dates.isna(), "date", "is not a date (use ISO, e.g. 2016-01-04)")
    frame["date"] = dates.dt.normalize()
    frame["tic"] = frame["tic"].astype(str).str.strip()
    _first_bad(path, frame, frame["tic"].isin(["", "nan", "None"]), "tic", "is empty")
    for col in _NUMERIC:
        values = pd.to_numeric(frame[col], errors="coerce")
        _first_bad(path, frame, ~np.isfinite(values.to_numpy(dtype=np.float64)), col, "is not a finite number")
        frame[col] = values.astype(np.float64)
    _first_bad(path, frame, frame["close"] <= 0, "close", "must be positive")
    _first_bad(path, frame, frame.duplicated(["date", "tic"]), "date",
               "repeats a (date, tic) pair seen on an earlier row")
    frame = frame.sort_values(["date", "tic"], kind="stable").reset_index(drop=True)
    counts = frame.groupby("date")["tic"].nunique()
    n_tickers = frame["tic"].nunique()
    if (counts < n_tickers).any():
        day = counts.index[int(np.argmax(counts.to_numpy() < n_tickers))]
        have = set(frame.loc[frame["date"] == day, "tic"])
        lacking = sorted(set(frame["tic"]) - have)
        raise InvalidDataError(
            f"data_path {path!r}: date {day.date()} has no row for ticker(s) {', '.join(lacking)}; "
            "every ticker needs a row on every date (fill the gap or drop the ticker)")
    return frame


def _first_bad(path: str, frame, bad, column: str, problem: str) -> None:
    mask = np.asarray(bad, dtype=bool)
    if mask.any():
        row = int(np.argmax(mask))
        raise InvalidDataError(f"data_path {path!r}, row {row + 1} (line {row + 2}): column {column!r} "
                               f"value {frame[column].iloc[row]!r} {problem}")


def _from_long(frame, names: tuple[str, ...], path: str) -> MarketData:
    import pandas as pd

    for col in [n for n in names if n in frame.columns] + (["turbulence"] if "turbulence" in frame else []):
        frame[col] = pd.to_numeric(frame[col], errors="coerce")
    tickers = tuple(sorted(frame["tic"].unique()))
    dates = np.sort(frame["date"].unique()).astype("datetime64[D]")

    def wide(col: str) -> np.ndarray:
        return frame.pivot(index="date", columns="tic", values=col)[list(tickers)].to_numpy(np.float64)

    ohlcv = {col: wide(col) for col in _NUMERIC}
    given = [n for n in names if n in frame.columns]
    ind = np.empty((len(dates), len(names), len(tickers)))
    computed = [n for n in names if n not in given]
    for j in range(len(tickers)):
        if computed:
            ind[:, [names.index(n) for n in computed], j] = compute_indicators(
                {col: ohlcv[col][:, j] for col in _NUMERIC}, computed)
    for n in given:
        values = wide(n)
        if not np.isfinite(values).all():
            raise InvalidDataError(f"data_path {path!r}: indicator column {n!r} has missing or "
                                   "non-numeric values; fill them or drop the column to have it computed")
        ind[:, names.index(n), :] = values
    turb = np.zeros(0)
    if "turbulence" in frame.columns:
        turb = frame.groupby("date")["turbulence"].first().to_numpy(np.float64)
        if not np.isfinite(turb).all():
            raise InvalidDataError(f"data_path {path!r}: column 'turbulence' has missing values")
    return MarketData(dates, tickers, ohlcv["close"], ind, names, turb)
