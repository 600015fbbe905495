"""Market data for FinRL-v0: the offline S&P 500 set or a user file, validated and cached.

The default data is skfolio's ``load_sp500_dataset()``: 20 S&P 500 stocks, daily
adjusted closes 1990-01-02..2022-12-28, shipped inside the skfolio wheel. It has closes
only (see :mod:`.indicators` for what that means for ``cci_30`` and ``dx_30``). A user
file (``data_path=``) is a CSV or Parquet in FinRL's long format: one row per date and
ticker with ``date, tic, open, high, low, close, volume`` (ISO dates, year first, or
YYYYMMDD integers) and, optionally, indicator columns (used as given) and ``turbulence``.

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

import collections
import functools
import os
import re
import stat as stat_mode
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from openenv_gym.envs.finrl.indicators import DEFAULT_INDICATORS, compute_indicators, turbulence
from openenv_gym.errors import InvalidDataError

__all__ = ["MarketData", "SPLITS", "REQUIRED_COLUMNS", "load_market_data", "load_sp500_index",
           "read_long_format"]

#: Date windows (inclusive) of the named splits: FinRL's tutorial periods.
SPLITS: dict[str, tuple[str, str]] = {
    "train": ("2009-01-01", "2015-12-31"),
    "trade": ("2016-01-04", "2020-05-08"),
}
#: Columns every row of a user file needs (FinRL's long format).
REQUIRED_COLUMNS: tuple[str, ...] = ("date", "tic", "open", "high", "low", "close", "volume")
_NUMERIC = ("open", "high", "low", "close", "volume")
# A UTC offset (or Z/UTC/GMT) written after a time of day, as in "2020-03-09 00:00:00-04:00".
# The time is required so that the "-09" of a bare date is never taken for an offset.
_TRAILING_OFFSET = r"(\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(?:Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)$"
# A value starts with a whole day, year first: 2020-01-02, 2020/1/2 or 20200102 (then a time,
# if any). ISO alone would also take a year ("2020", read as 2020-01-01), a month or a
# signed year ("-20200102", year -2020): never a day's bar, so refused by row.
_YEAR_MONTH_DAY = r"^\d{4}(?:\d{4}|[-/]\d{1,2}[-/]\d{1,2})(?!\d)"


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
        """The days between ``start`` and ``end`` (inclusive days, see :func:`_day`; None: open end)."""
        lo = 0 if start is None else int(np.searchsorted(self.dates, _day(start, "start"), "left"))
        hi = len(self.dates) if end is None else int(np.searchsorted(self.dates, _day(end, "end"), "right"))
        if hi - lo < 2:
            # An open end is the data's own first or last day, not "None".
            first = "(first day)" if start is None else start
            last = "(last day)" if end is None else end
            span = "the data" if start is None and end is None else f"the window {first}..{last}"
            raise InvalidDataError(
                f"{span} holds {max(hi - lo, 0)} trading day(s); an episode needs "
                f"at least 2. The data covers {self.dates[0]}..{self.dates[-1]}")
        return MarketData(self.dates[lo:hi], self.tickers, self.close[lo:hi], self.indicators[lo:hi],
                          self.indicator_names, self.turbulence[lo:hi])


def _day(value: object, what: str) -> np.datetime64:
    """A ``start=``/``end=`` value as a day, read by the rule of a file's dates
    (:func:`_parse_dates`): ISO year first (``2016-01-04``, ``2016/01/04``, with a time or
    not), YYYYMMDD (``"20160104"`` or ``20160104``), or a date, datetime or ``datetime64``;
    its calendar day as written.

    Raises:
        InvalidDataError: Not such a day, or a year or month alone.
    """
    import pandas as pd

    day = _parse_dates(pd.Series([value], dtype=object), what).iloc[0]
    if pd.isna(day):
        # numpy read '2016-02' as 2016-02-01 (end='2016-02' would end the window on the
        # month's first day, not cover the month) and 20160104 as the year 20160104.
        alone = re.fullmatch(r"\s*\d{4}(?:[-/](\d{1,2}))?\s*", str(value))
        if alone:
            raise InvalidDataError(f"{what}={value!r} is a {'month' if alone[1] else 'year'} alone; "
                                   f"{what} is one day (inclusive), e.g. '2016-01-04'")
        raise InvalidDataError(f"{what}={value!r} is not a date written year first, like "
                               "'2016-01-04' or 20160104")
    return np.datetime64(day, "D")


def load_market_data(split: str | None = "auto", start: str | None = None, end: str | None = None,
                     tickers: str | Sequence[str] | None = None, data_path: str | None = None,
                     indicators: str | Sequence[str] = DEFAULT_INDICATORS,
                     with_turbulence: bool = True) -> MarketData:
    """Load (once per process) and window the data an env trades on.

    Args:
        split: ``"train"`` (2009–2015), ``"trade"`` (2016-01-04..2020-05-08), None (all) or
            ``"auto"``: ``"train"`` for the default set, None for a ``data_path`` file (the
            named windows are the default set's periods). ``start``/``end`` override its bounds.
        start: First day (inclusive): ISO, YYYYMMDD or a date, read as a file's dates are.
        end: Last day (inclusive), as ``start``.
        tickers: Subset of tickers, in this order (default: all of the data's); a bare
            string is one ticker. Each ticker may appear once.
        data_path: A user CSV/Parquet in FinRL's long format instead of the default set.
        indicators: Indicator names (stockstats names, or columns of the user file); a bare
            string is one indicator.
        with_turbulence: Compute the turbulence index (a file's own ``turbulence`` column
            is used either way). False leaves it 0 on every day: an env without a
            ``turbulence_threshold`` never reads it, and for hundreds of stocks it costs
            seconds to minutes.

    Returns:
        The :class:`MarketData` of the window.

    Raises:
        InvalidDataError: Unknown split, unknown or repeated ticker, unreadable or malformed
            file, empty window.
    """
    auto = split == "auto"
    if auto:
        # A user's own file is traded whole unless asked: the windows are the default set's.
        split = None if data_path is not None else "train"
    if split is not None and split not in SPLITS:
        raise InvalidDataError(f"split={split!r} is unknown; use one of {', '.join(SPLITS)}, 'auto' "
                               "or None (or give start=/end= dates)")
    lo, hi = SPLITS[split] if split is not None else (None, None)
    source = _source_key(data_path)
    names = _names(indicators)
    if names is None:
        raise InvalidDataError(f"indicators must be an indicator name ('macd') or a list of "
                               f"names (an empty list: none), got {indicators!r}")
    full = _load_tickers(source, _requested_tickers(tickers), names, bool(with_turbulence))
    first, last = (start if start is not None else lo), (end if end is not None else hi)
    if first is not None and last is not None and _day(first, "start") > _day(last, "end"):
        # The window would be empty; say which bound is the split's, as start= alone keeps
        # the split's end (start='2018-01-02' with the default split='auto' ends in 2015).
        if start is not None and end is not None:
            how = "swap them"
        else:
            other, edge, way = ("end", "last", "to") if end is None else ("start", "first", "from")
            named = f"split={split!r}" + (" (what split='auto' is on the default data)" if auto else "")
            how = (f"{other} is the {edge} day of {named}; give {other}= too, or split=None "
                   f"to trade {way} the data's {edge} day")
        raise InvalidDataError(f"start={first!r} is after end={last!r}: {how}. The data covers "
                               f"{full.dates[0]}..{full.dates[-1]}")
    return full.window(first, last)


def _names(value: Any) -> tuple[str, ...] | None:
    """``tickers=`` or ``indicators=`` as a tuple of names, or None when it is not a string or
    an iterable of strings.

    A bare string is one name, as in most market-data APIs (yfinance's ``Ticker("AAPL")``):
    iterating it would trade its letters, which no one means. Any other iterable is read once,
    so a generator gives its names (checking it first would leave it empty).
    """
    if isinstance(value, str):
        return (value,)
    if not hasattr(value, "__iter__"):
        return None
    names = tuple(value)
    return names if all(isinstance(n, str) for n in names) else None


def _requested_tickers(tickers: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """The ``tickers=`` argument as a tuple, refusing repeats.

    Args:
        tickers: None (all), one ticker as a string, or a sequence of tickers.

    Returns:
        The tickers in the given order, or None.

    Raises:
        InvalidDataError: A ticker is listed more than once, or none is.
    """
    if tickers is None:
        return None
    chosen = _names(tickers)
    if chosen is None:
        raise InvalidDataError(f"tickers must be a ticker ('AAPL'), a list of tickers "
                               f"(['AAPL', 'JPM']) or None (all), got {tickers!r}")
    if not chosen:  # else "tickers [] are not in the data", as if [] were a ticker
        raise InvalidDataError("tickers is empty; name at least one ticker, or give None for all of them")
    repeated = [t for t, n in collections.Counter(chosen).items() if n > 1]
    if repeated:
        # A repeated stock would get two action and holding slots on one price series.
        raise InvalidDataError(f"tickers lists {', '.join(map(repr, repeated))} more than once; "
                               "give each ticker once")
    return chosen


def _source_key(data_path: str | None) -> tuple:
    if data_path is None:
        return ("sp500",)
    path = os.path.abspath(os.path.expanduser(str(data_path)))
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise InvalidDataError(f"data_path {data_path!r} cannot be read: {exc.strerror}") from None
    if not (stat_mode.S_ISREG(stat.st_mode) or stat_mode.S_ISDIR(stat.st_mode)):
        # Reading a FIFO (or a terminal, a socket) waits for a writer that may never come:
        # the worker would hang at make time instead of failing. A directory goes on to the
        # reader: a partitioned Parquet dataset is one.
        raise InvalidDataError(f"data_path {data_path!r} is not a regular file (a pipe, socket or "
                               "device); write the data to a .csv or .parquet file and pass its path")
    # mtime and size in the key: an edited file is reloaded, not served stale.
    return (path, stat.st_mtime_ns, stat.st_size)


@dataclass(frozen=True)
class _Table:
    """A whole source, before choosing tickers: wide ``(T, D)`` arrays per column."""

    dates: np.ndarray
    tickers: tuple[str, ...]
    columns: dict[str, np.ndarray]  # close (always), open/high/low/volume, given indicators
    turbulence: np.ndarray  # given by the file, else empty
    text: tuple[str, ...] = ()  # extra columns mostly not numbers (sector, name): no indicators


@functools.lru_cache(maxsize=8)
def _load_tickers(source: tuple, tickers: tuple[str, ...] | None, names: tuple[str, ...],
                  with_turbulence: bool = True) -> MarketData:
    table = _load_source(source)
    if tickers is None:
        chosen = list(range(len(table.tickers)))
    else:
        unknown = [t for t in tickers if t not in table.tickers]
        if unknown:
            raise InvalidDataError(f"tickers {unknown} are not in the data; available: "
                                   f"{', '.join(table.tickers)}")
        chosen = [table.tickers.index(t) for t in tickers]
    present = np.isfinite(table.columns["close"][:, chosen])
    days = present.any(axis=1)  # the dates any chosen ticker trades
    if not present[days].all():
        row, col = np.argwhere(~present & days[:, None])[0]
        lacking = [table.tickers[chosen[j]] for j in np.flatnonzero(~present[row])]
        raise InvalidDataError(
            f"data_path {source[0]!r}: date {table.dates[row]} has no row for ticker(s) "
            f"{', '.join(lacking)}; every ticker traded needs a row on every date (fill the gap, "
            f"or leave the ticker out with tickers=)")
    for n in names:
        if n in table.text:  # else stockstats, asked for it, calls it no column of the data
            raise InvalidDataError(f"data_path {source[0]!r}: column {n!r} is asked for as an indicator "
                                   "but holds text (most of its values are not numbers); an indicator "
                                   "column holds numbers")
        if n in table.columns and not np.isfinite(given := table.columns[n][days][:, chosen]).all():
            # Pivoted to (dates, tickers), the first gap in date order is the earliest one.
            row, col = np.argwhere(~np.isfinite(given))[0]
            raise InvalidDataError(f"data_path {source[0]!r}: column {n!r} has missing or non-numeric "
                                   f"values, the first for ticker {table.tickers[chosen[col]]} on "
                                   f"{table.dates[days][row]}; fill them, or drop the column to have "
                                   "it computed")
    close = table.columns["close"][days][:, chosen]
    ind = np.stack([_indicators(source, j, names)[days] for j in chosen], axis=2)
    # Turbulence depends on the set of stocks, so it is computed after choosing them,
    # unless the user's file brings its own.
    if table.turbulence.size:
        turb = table.turbulence[days]
    else:
        turb = turbulence(close) if with_turbulence else np.zeros(len(close))
    return MarketData(table.dates[days], tuple(table.tickers[i] for i in chosen), close, ind, names, turb)


@functools.lru_cache(maxsize=256)
def _indicators(source: tuple, column: int, names: tuple[str, ...]) -> np.ndarray:
    """``(T, K)`` indicators of one ticker: given columns as they are, the rest computed
    on the ticker's own dates (NaN on dates it has no row)."""
    table = _load_source(source)
    out = np.full((len(table.dates), len(names)), np.nan)
    computed = [k for k, n in enumerate(names) if n not in table.columns]
    if computed:
        own = np.isfinite(table.columns["close"][:, column])
        series = {c: table.columns[c][own, column] for c in _NUMERIC if c in table.columns}
        out[np.ix_(own, computed)] = compute_indicators(series, [names[k] for k in computed])
    for k, n in enumerate(names):
        if n in table.columns:
            out[:, k] = table.columns[n][:, column]
    return out


@functools.lru_cache(maxsize=4)
def _load_source(source: tuple) -> _Table:
    if source == ("sp500",):
        return _load_sp500()
    return _from_long(read_long_format(source[0]), source[0])


def _load_sp500() -> _Table:
    import pandas as pd

    path = _skfolio_data_file("sp500_dataset.csv.gz")
    if path is None:  # an unusual skfolio layout: take the slow, public way
        from skfolio.datasets import load_sp500_dataset

        prices = load_sp500_dataset()
    else:
        prices = pd.read_csv(path, index_col=0)
        prices.index = pd.to_datetime(prices.index, format="%Y-%m-%d")
    prices = prices.sort_index()
    return _Table(prices.index.to_numpy().astype("datetime64[D]"), tuple(map(str, prices.columns)),
                  {"close": prices.to_numpy(dtype=np.float64)}, np.zeros(0))


def _skfolio_data_file(name: str) -> str | None:
    """Path of a CSV shipped in skfolio's wheel, found without importing skfolio.

    ``import skfolio`` pulls in scikit-learn and scipy (about 5 s); a worker only needs
    the file. skfolio's ``load_*`` functions read the same file.
    """
    import importlib.util

    spec = importlib.util.find_spec("skfolio")
    if spec is None or not spec.submodule_search_locations:
        raise InvalidDataError("the default FinRL-v0 data ships with skfolio: pip install "
                               "'openenv-gym[finrl]' (or pass data_path=)")
    for root in spec.submodule_search_locations:
        path = os.path.join(root, "datasets", "data", name)
        if os.path.exists(path):
            return path
    return None


def load_sp500_index():  # -> pandas.Series
    """skfolio's S&P 500 index series (daily adjusted closes, 1990-01-02..2022-12-28).

    Returns:
        A pandas Series indexed by date.
    """
    import pandas as pd

    path = _skfolio_data_file("sp500_index.csv.gz")
    if path is None:
        from skfolio.datasets import load_sp500_index as load

        frame = load()
    else:
        frame = pd.read_csv(path, index_col=0)
        frame.index = pd.to_datetime(frame.index, format="%Y-%m-%d")
    return frame.iloc[:, 0].sort_index()


def read_long_format(path: str):  # -> pandas.DataFrame (pandas loads lazily)
    """Read and validate a FinRL long-format CSV/Parquet, row by row (ISO or YYYYMMDD
    dates, finite positive prices, finite volume not below 0). A row for every ticker on
    every date is checked where the tickers an env trades are known (``tickers=`` may leave
    out one listed later).

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
    written: list[str] | None = None  # a CSV's header as written
    try:
        if lower.endswith((".parquet", ".pq")):
            frame = pd.read_parquet(path)
        elif lower.endswith((".csv", ".csv.gz", ".txt")):
            # pandas renames a repeated name ("close", "close.1") and reads the first: the
            # header read as a data row keeps the names as written, to refuse repeats.
            written = list(pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0])
            # Tickers are names: "000001" (Shenzhen) or "0700" (HKEX) keep their zeros. Dates
            # stay text, parsed by one rule below: 20200102 is a date, not an integer. Named
            # as written, " tic" too: the names are stripped only after reading.
            text = {c: str for c in written if c.strip() in ("tic", "date")}
            frame = _tickers_as_written(pd.read_csv(path, dtype=text), path)
        else:
            raise InvalidDataError(f"data_path {path!r}: use a .csv, .csv.gz or .parquet file")
    except InvalidDataError:
        raise
    except Exception as exc:  # pandas raises many types for unreadable files
        raise InvalidDataError(f"data_path {path!r} cannot be read: {type(exc).__name__}: {exc}") from None
    if any(name in REQUIRED_COLUMNS for name in frame.index.names):
        # A Parquet written from a frame indexed by date (and tic) brings them back as its index.
        frame = frame.reset_index()
    frame.columns = [str(c).strip() for c in frame.columns]
    names = list(frame.columns) if written is None else [c.strip() for c in written if c.strip()]
    repeated = sorted({c for c in names if names.count(c) > 1})
    if repeated:
        raise InvalidDataError(f"data_path {path!r} has column(s) {', '.join(map(repr, repeated))} more "
                               "than once (names are compared without surrounding spaces); keep one of each")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InvalidDataError(
            f"data_path {path!r} lacks column(s) {', '.join(map(repr, missing))}; FinRL's long format "
            f"needs {', '.join(REQUIRED_COLUMNS)} (one row per date and ticker) plus optional "
            f"indicator columns; found {', '.join(frame.columns)}")
    if frame.empty:
        raise InvalidDataError(f"data_path {path!r} has no rows")
    raw = {c: frame[c] for c in REQUIRED_COLUMNS}  # as written, for error messages
    frame["date"] = _parse_dates(frame["date"], path).dt.normalize()
    frame["tic"] = frame["tic"].astype(str).str.strip()
    for col in _NUMERIC:
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(np.float64)
    _raise_first_bad_row(path, frame, raw)
    frame = frame.sort_values(["date", "tic"], kind="stable").reset_index(drop=True)
    return frame


def _parse_dates(raw, path: str):  # pandas.Series -> pandas.Series of naive datetimes
    """Each row's date and time as written, in the file's own timezone, without the zone.

    A daily bar belongs to the calendar day it was written for: ``2020-01-06 00:00+09:00``
    is Monday the 6th, not Sunday the 5th in UTC. Offsets may differ between rows (a file
    from tz-aware data spanning a daylight-saving change), which pandas refuses to parse
    into one column, so string offsets are dropped rather than converted.

    Args:
        raw: The ``date`` column as read: strings, dates, naive or tz-aware datetimes,
            or YYYYMMDD numbers.
        path: The file, for the message.

    Returns:
        Naive datetimes, NaT where a value is not an ISO (year-first) date.

    Raises:
        InvalidDataError: The column mixes time zones in a form that cannot be read.
    """
    import pandas as pd

    if isinstance(raw.dtype, pd.DatetimeTZDtype):
        return raw.dt.tz_localize(None)  # keeps the wall-clock time (tz_convert would go to UTC)
    if pd.api.types.is_datetime64_dtype(raw.dtype):
        return raw
    # Dates repeat once per ticker: parse each distinct value once, then spread back.
    codes, uniques = pd.factorize(raw)
    text = pd.Series(uniques, dtype=object).map(_date_text).str.strip()
    text = text.where(text.str.match(_YEAR_MONTH_DAY, na=False))  # else NaT, refused by row
    text = text.str.replace(_TRAILING_OFFSET, r"\1", regex=True)
    try:
        # ISO only (year first: 2020-01-02, 2020/01/02, 20200102, with or without a time),
        # per value, so date-only and date-time values may sit side by side. Other layouts
        # are left unparsed (NaT, refused by row): 02/01/2020 is 2 January or 1 February
        # depending on the writer, and pandas would guess the order from the first value.
        parsed = pd.to_datetime(text, format="ISO8601", errors="coerce")
    except ValueError as exc:  # zones in a form the offset pattern misses, mixed across rows
        raise InvalidDataError(f"data_path {path!r}: column 'date' cannot be parsed ({exc}); write "
                               "dates as ISO, e.g. 2016-01-04 or 2016-01-04 00:00:00-05:00") from None
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):  # one zone the pattern missed: same rule
        parsed = parsed.dt.tz_localize(None)
    values = np.append(parsed.to_numpy(), np.datetime64("NaT"))  # code -1 (a missing value) -> NaT
    return pd.Series(values[codes], index=raw.index)


def _date_text(value) -> str | None:
    """A ``date`` value as the text the ISO rule of :func:`_parse_dates` reads.

    A number is YYYYMMDD, as tushare's ``trade_date`` or a CSV's ``20200102`` read as an
    integer: its digits are the text, so 20200102 is read exactly as "20200102" is and 2020
    or 1609718400 are refused as their text is. It is never seconds or nanoseconds since
    1970 (pandas' reading of a number as a date, which puts every row on one day). A whole
    float counts as its integer: pandas stores an integer column with a blank (a CSV's, or
    a Parquet int column with nulls) as floats.

    Args:
        value: One distinct value of the column as read (never missing: factorized out).

    Returns:
        The text to parse, or None (a refused row) for a fraction, an infinity or a bool.
    """
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (float, np.floating)):
        if not (np.isfinite(value) and float(value).is_integer()):
            return None
        value = int(value)
    return str(int(value)) if isinstance(value, (int, np.integer)) else str(value)


def _raise_first_bad_row(path: str, frame, raw: dict) -> None:
    """Raise for the earliest row that fails any row check (its first failing check).

    Args:
        path: The file, for the message.
        frame: The parsed frame (dates normalized, tic stripped, prices as float).
        raw: The required columns as read, to quote the offending value as written.

    Raises:
        InvalidDataError: Names the row (1-based below the header, and its line), the
            column, the value and what is wrong with it.
    """
    # (column, problem, bad rows), in the order a row's problems are reported.
    checks: list[tuple[str, str, np.ndarray]] = [
        ("date", "is not an ISO date; write dates as YYYY-MM-DD, e.g. 2016-01-04 (a day/month "
                 "order such as 02/01/2016 is ambiguous)", frame["date"].isna().to_numpy()),
        ("tic", "is empty", (raw["tic"].isna() | (frame["tic"] == "")).to_numpy()),
    ]
    for col in _NUMERIC:
        checks.append((col, "is not a finite number", ~np.isfinite(frame[col].to_numpy())))
    # A price of 0 or below is a vendor's placeholder or an error, never a trade (a buy at 0
    # is free; stockstats' ranges and ratios turn it into indicator spikes). Zero volume is
    # real (a halted or illiquid day); negative volume is not. high < low is let through:
    # it affects only high/low indicators, and vendor data has such rows.
    for col in ("open", "high", "low", "close"):
        checks.append((col, "must be positive", (frame[col] <= 0).to_numpy()))
    checks.append(("volume", "must not be negative", (frame["volume"] < 0).to_numpy()))
    checks.append(("date", "repeats a (date, tic) pair", frame.duplicated(["date", "tic"]).to_numpy()))
    bad = np.stack([mask for _, _, mask in checks])  # (checks, rows)
    failing = bad.any(axis=0)
    if not failing.any():
        return
    row = int(np.argmax(failing))
    column, problem, _ = checks[int(np.argmax(bad[:, row]))]
    if problem.startswith("repeats"):
        same = (frame["date"] == frame["date"].iloc[row]) & (frame["tic"] == frame["tic"].iloc[row])
        problem += f" first seen on row {int(np.argmax(same.to_numpy())) + 1}"
    value = raw[column].iloc[row]
    value = value.item() if isinstance(value, np.generic) else value  # 0.0, not np.float64(0.0)
    raise InvalidDataError(f"data_path {path!r}, row {row + 1} (line {row + 2}): column {column!r} "
                           f"value {value!r} {problem}")


def _tickers_as_written(frame, path: str):
    """``frame`` with its ``tic`` column as the file writes it: pandas reads "NA", "NULL",
    "None" or "nan" as a missing value, and they are tickers too (Nano Labs trades as NA).
    Read again, as text, only where a ticker came out missing."""
    import pandas as pd

    names = [c for c in frame.columns if str(c).strip() == "tic"]
    if len(names) == 1 and frame[names[0]].isna().any():
        frame[names[0]] = pd.read_csv(path, usecols=names, dtype=str, keep_default_na=False)[names[0]]
    return frame


def _from_long(frame, path: str) -> _Table:
    import pandas as pd

    tickers = tuple(sorted(frame["tic"].unique()))
    dates = np.sort(frame["date"].unique()).astype("datetime64[D]")
    extra = [c for c in frame.columns if c not in REQUIRED_COLUMNS and c != "turbulence"]
    columns: dict[str, np.ndarray] = {}
    for col in (*_NUMERIC, *extra):
        if col in extra and not _is_indicator_like(frame[col]):
            continue  # text (sector, name): not an indicator; asking for it is refused by name
        values = pd.to_numeric(frame[col], errors="coerce") if col in extra else frame[col]
        # NaN where a ticker has no row on a date (checked for the tickers an env trades)
        # and, in an indicator column, where a value is missing (checked if it is asked for).
        columns[col] = pd.DataFrame({"date": frame["date"], "tic": frame["tic"], "v": values}).pivot(
            index="date", columns="tic", values="v")[list(tickers)].to_numpy(np.float64)
    turb = np.zeros(0)
    if "turbulence" in frame.columns:
        turb = pd.to_numeric(frame.groupby("date")["turbulence"].first(), errors="coerce").to_numpy(np.float64)
        if not np.isfinite(turb).all():
            # groupby sorts its keys: turb lines up with the sorted ``dates``.
            first = dates[int(np.argmax(~np.isfinite(turb)))]
            raise InvalidDataError(f"data_path {path!r}: column 'turbulence' has missing or non-numeric "
                                   f"values, the first on {first}; fill them (FinRL's is 0 before a year "
                                   "of history), or drop the column to have it computed")
    text = tuple(c for c in extra if c not in columns)
    return _Table(dates, tickers, columns, turb, text)


def _is_indicator_like(series) -> bool:
    # Mostly-numeric columns are meant as indicators; text columns (sector, name) are not.
    import pandas as pd

    return bool(pd.to_numeric(series, errors="coerce").notna().mean() > 0.5)
