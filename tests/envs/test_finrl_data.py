"""FinRL-v0 data: the offline S&P 500 set, user-file validation, indicators and turbulence."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("skfolio")
pytest.importorskip("stockstats")

import openenv_gym  # noqa: E402,F401
from openenv_gym.envs.finrl.data import load_market_data  # noqa: E402
from openenv_gym.envs.finrl.env import FinRLEnv  # noqa: E402
from openenv_gym.envs.finrl.indicators import DEFAULT_INDICATORS, turbulence  # noqa: E402
from openenv_gym.errors import InvalidDataError  # noqa: E402
from tests.envs.test_finrl_accounting import ROWS, write_csv  # noqa: E402


def test_default_splits_cover_finrl_periods() -> None:
    train = load_market_data("train")
    trade = load_market_data("trade")
    assert len(train.tickers) == 20
    assert str(train.dates[0]) == "2009-01-02" and str(train.dates[-1]) == "2015-12-31"
    assert str(trade.dates[0]) == "2016-01-04" and str(trade.dates[-1]) == "2020-05-08"
    assert trade.indicators.shape == (len(trade.dates), len(DEFAULT_INDICATORS), 20)
    assert np.isfinite(trade.indicators).all() and np.isfinite(trade.turbulence).all()
    # Indicators come from the full history: the window's first day is already warmed up.
    sma30 = trade.indicators[0, DEFAULT_INDICATORS.index("close_30_sma")]
    full = load_market_data(None)
    i = int(np.searchsorted(full.dates, trade.dates[0]))
    np.testing.assert_allclose(sma30, full.close[i - 29: i + 1].mean(axis=0))


def test_explicit_dates_and_tickers() -> None:
    data = load_market_data(None, start="2019-01-01", end="2019-01-31", tickers=["JPM", "AAPL"])
    assert data.tickers == ("JPM", "AAPL")
    assert str(data.dates[0]) == "2019-01-02" and str(data.dates[-1]) == "2019-01-31"
    env = FinRLEnv(start="2019-01-01", end="2019-01-31", tickers=["JPM", "AAPL"])
    assert env.observation_space.shape == (1 + 2 * 2 + 8 * 2,)
    assert env.action_space.shape == (2,)


def test_data_loads_once_per_process() -> None:
    from openenv_gym.envs.finrl import data as module

    FinRLEnv(split="trade")
    before = module._load_source.cache_info().misses
    for _ in range(3):
        FinRLEnv(split="trade")
        FinRLEnv(split="train")
    assert module._load_source.cache_info().misses == before


def test_turbulence_matches_finrl_loop() -> None:
    from skfolio.datasets import load_sp500_dataset

    prices = load_sp500_dataset().iloc[:400, :6]
    fast = turbulence(prices.to_numpy())
    returns = prices.pct_change()
    for day in (252, 253, 300, 399):  # FinRL: the year before `day`, leading NaN rows dropped
        hist = returns.iloc[day - 252: day].dropna()
        dev = (returns.iloc[day] - hist.mean()).to_numpy()
        expected = dev @ np.linalg.pinv(hist.cov().to_numpy()) @ dev
        assert fast[day] == pytest.approx(expected, rel=1e-9)
    assert (fast[:252] == 0).all()


@pytest.mark.parametrize("bad", ["nope", "1990-01-01"])
def test_bad_splits_and_windows_are_named(bad: str) -> None:
    with pytest.raises(InvalidDataError, match="split|window"):
        if bad == "nope":
            load_market_data(bad)
        else:
            load_market_data(None, start="1980-01-01", end=bad)


def test_unknown_ticker_is_named() -> None:
    with pytest.raises(InvalidDataError, match=r"\['ZZZZ'\].*available: AAPL"):
        FinRLEnv(tickers=["AAPL", "ZZZZ"])


def test_an_empty_ticker_list_is_named_as_empty() -> None:
    # It was "tickers [] are not in the data", as if [] were a ticker.
    with pytest.raises(InvalidDataError, match=r"tickers is empty; name at least one ticker, or give None"):
        FinRLEnv(tickers=[])


def test_user_csv_missing_column_is_named(tmp_path: Path) -> None:
    rows = [r[:6] + r[7:] for r in ROWS]  # drop volume
    path = write_csv(tmp_path / "novol.csv", rows, "date,tic,open,high,low,close,macd,turbulence")
    with pytest.raises(InvalidDataError, match=r"lacks column\(s\) 'volume'"):
        FinRLEnv(split=None, data_path=path, indicators=("macd",))


def test_user_csv_missing_column_reaches_remote_caller(tmp_path: Path) -> None:
    rows = [r[:6] + r[7:] for r in ROWS]
    path = write_csv(tmp_path / "novol.csv", rows, "date,tic,open,high,low,close,macd,turbulence")
    with pytest.raises(InvalidDataError, match=r"cannot make env 'finrl'.*lacks column\(s\) 'volume'"):
        gym.make("OpenEnv/FinRL-v0", provider="process", split=None, data_path=path)


@pytest.mark.parametrize("row, value, column, problem", [
    (3, "not-a-date", "date", "is not an ISO date"),
    (2, "abc", "close", "is not a finite number"),
    (2, "", "close", "is not a finite number"),
    (6, "inf", "high", "is not a finite number"),
    (5, "-4", "close", "must be positive"),
    # Only close is traded on, but a price of 0 or below in any column is not a price.
    (1, "0", "open", "must be positive"),
    (7, "-1.5", "high", "must be positive"),
    (4, "0.0", "low", "must be positive"),
    (8, "-100", "volume", "must not be negative"),
])
def test_user_csv_bad_row_is_named(tmp_path: Path, row: int, value: str, column: str, problem: str) -> None:
    rows = [list(r) for r in ROWS]
    rows[row - 1][("date", "tic", "open", "high", "low", "close", "volume").index(column)] = value
    path = write_csv(tmp_path / "bad.csv", [tuple(r) for r in rows])
    with pytest.raises(InvalidDataError, match=rf"row {row} .*column '{column}' value .*{problem}"):
        FinRLEnv(split=None, data_path=path, indicators=("macd",))


def test_user_csv_gap_and_duplicate_are_named(tmp_path: Path) -> None:
    gap = write_csv(tmp_path / "gap.csv", ROWS[:3] + ROWS[4:])
    with pytest.raises(InvalidDataError, match="date 2021-01-05 has no row for ticker.*BBB"):
        FinRLEnv(split=None, data_path=gap, indicators=("macd",))
    dup = write_csv(tmp_path / "dup.csv", ROWS + [ROWS[2]])
    with pytest.raises(InvalidDataError, match=r"row 9 .*repeats a \(date, tic\) pair"):
        FinRLEnv(split=None, data_path=dup, indicators=("macd",))


def test_user_file_indicators_are_computed_when_absent(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    days = pd.bdate_range("2020-01-01", periods=80)
    rng = np.random.default_rng(0)
    frames = []
    for tic in ("X", "Y"):
        close = 50 * np.cumprod(1 + rng.normal(0, 0.01, len(days)))
        spread = rng.uniform(0, 0.02, (2, len(days)))
        frames.append(pd.DataFrame({"date": days, "tic": tic, "open": close, "high": close * (1 + spread[0]),
                                    "low": close * (1 - spread[1]), "close": close, "volume": 1e6}))
    path = tmp_path / "ohlcv.parquet"
    try:
        pd.concat(frames).to_parquet(path)
    except ImportError:
        path = tmp_path / "ohlcv.csv"
        pd.concat(frames).to_csv(path, index=False)
    env = FinRLEnv(split=None, data_path=str(path))
    obs, _ = env.reset()
    assert obs.shape == (1 + 2 * 2 + 8 * 2,) and np.isfinite(obs).all()
    assert env.data.turbulence.shape == (80,)
    # With high/low given, cci_30 reads them: it differs from a close-only cci_30.
    from openenv_gym.envs.finrl.indicators import compute_indicators

    k = DEFAULT_INDICATORS.index("cci_30")
    close_only = compute_indicators({"close": env.data.close[:, 0]}, ["cci_30"])[:, 0]
    assert not np.allclose(env.data.indicators[:, k, 0], close_only)


def test_default_data_is_skfolios_sp500_set() -> None:
    from skfolio.datasets import load_sp500_dataset, load_sp500_index as skfolio_index

    from openenv_gym.envs.finrl.data import load_sp500_index

    prices = load_sp500_dataset()
    data = load_market_data(None)
    assert data.tickers == tuple(prices.columns)
    np.testing.assert_array_equal(data.close, prices.to_numpy())
    assert load_sp500_index().equals(skfolio_index().iloc[:, 0])


def test_unknown_indicator_is_named() -> None:
    with pytest.raises(InvalidDataError, match="indicator 'no_such_thing' is neither"):
        FinRLEnv(tickers=["AAPL"], indicators=("macd", "no_such_thing"))


def _with_dates(dates: list[str]) -> list[tuple]:
    """ROWS (two tickers a day) with the four days' dates replaced by ``dates``."""
    return [(dates[i // 2], *row[1:]) for i, row in enumerate(ROWS)]


def test_offsets_changing_across_a_dst_change_load_as_written_dates(tmp_path: Path) -> None:
    # What a CSV written from tz-aware America/New_York data looks like around 2021-03-14.
    dates = ["2021-03-11 00:00:00-05:00", "2021-03-12 00:00:00-05:00", "2021-03-15 00:00:00-04:00",
             "2021-03-16 00:00:00-04:00"]
    env = FinRLEnv(split=None, data_path=write_csv(tmp_path / "dst.csv", _with_dates(dates)),
                   indicators=("macd",))
    assert [str(d) for d in env.data.dates] == ["2021-03-11", "2021-03-12", "2021-03-15", "2021-03-16"]


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_dates_east_of_utc_keep_their_calendar_day(tmp_path: Path, kind: str) -> None:
    pd = pytest.importorskip("pandas")
    days = ["2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07"]  # Monday..Thursday
    if kind == "csv":
        path = write_csv(tmp_path / "tokyo.csv", _with_dates([f"{d}T00:00:00+09:00" for d in days]))
    else:
        pytest.importorskip("pyarrow")
        frame = pd.read_csv(write_csv(tmp_path / "plain.csv"))
        frame["date"] = pd.to_datetime(frame["date"]).dt.tz_localize("Asia/Tokyo")
        path = str(tmp_path / "tokyo.parquet")
        frame.to_parquet(path)
    env = FinRLEnv(split=None, data_path=path, indicators=("macd",))
    _, info = env.reset()
    assert info["date"] == "2021-01-04"
    assert [str(d) for d in env.data.dates] == days
    # The window's bounds are the file's days: no day is cut at either end.
    window = FinRLEnv(split=None, start="2021-01-05", end="2021-01-06", data_path=path, indicators=("macd",))
    assert [str(d) for d in window.data.dates] == ["2021-01-05", "2021-01-06"]


def test_offsets_mixed_with_plain_dates_read_per_row(tmp_path: Path) -> None:
    dates = ["2021-01-04", "2021-01-05T00:00:00Z", "2021-01-06 00:00:00+09:00", "2021-01-07 00:00-05:00"]
    env = FinRLEnv(split=None, data_path=write_csv(tmp_path / "mixed.csv", _with_dates(dates)),
                   indicators=("macd",))
    assert [str(d) for d in env.data.dates] == ["2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07"]


def test_numeric_dates_are_not_dates(tmp_path: Path) -> None:
    # Epoch seconds would become nanoseconds after 1970-01-01: every row on one day.
    path = write_csv(tmp_path / "epoch.csv", _with_dates(["1609718400", "1609804800", "1609891200",
                                                          "1609977600"]))
    with pytest.raises(InvalidDataError, match=r"row 1 .*column 'date' value '1609718400' is not an ISO date"):
        FinRLEnv(split=None, data_path=path, indicators=("macd",))


@pytest.mark.parametrize("dates, row, value", [
    # 2..7 January 2021 written day first: every day <= 12, so month first also "works".
    (["04/01/2021", "05/01/2021", "06/01/2021", "07/01/2021"], 1, "04/01/2021"),
    # A first day > 12, from which pandas would infer day first (for this file only).
    (["13/01/2021", "14/01/2021", "15/01/2021", "18/01/2021"], 1, "13/01/2021"),
    (["01/04/2021", "01/05/2021", "01/06/2021", "01/07/2021"], 1, "01/04/2021"),  # US, month first
    (["2021-01-04", "2021-01-05", "06/01/2021", "2021-01-07"], 5, "06/01/2021"),  # one row in another layout
    (["Jan 4, 2021", "Jan 5, 2021", "Jan 6, 2021", "Jan 7, 2021"], 1, "Jan 4, 2021"),
])
def test_dates_not_written_year_first_are_refused(tmp_path: Path, dates: list[str], row: int,
                                                  value: str) -> None:
    # Read as written they would be some other day, or a day that depends on the file's
    # first value: the order of day and month is not in the file.
    path = write_csv(tmp_path / "dates.csv", [(f'"{r[0]}"', *r[1:]) for r in _with_dates(dates)])
    with pytest.raises(InvalidDataError, match=rf"row {row} \(line {row + 1}\): column 'date' value "
                                               rf"'{value}' is not an ISO date; write dates as YYYY-MM-DD"):
        FinRLEnv(split=None, data_path=path, indicators=("macd",))


@pytest.mark.parametrize("dates", [["2021/01/04", "2021/01/05", "2021/01/06", "2021/01/07"],
                                   ["20210104", "20210105", "20210106", "20210107"],  # tushare's trade_date
                                   ["2021-01-04", "2021-01-05 00:00:00", "2021-1-6", " 2021-01-07 "]])
def test_year_first_dates_are_read(tmp_path: Path, dates: list[str]) -> None:
    env = FinRLEnv(split=None, data_path=write_csv(tmp_path / "ymd.csv", _with_dates(dates)),
                   indicators=("macd",))
    assert [str(d) for d in env.data.dates] == ["2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07"]


def test_parquet_date_columns_are_read_as_typed(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.read_csv(write_csv(tmp_path / "plain.csv"))
    for kind, dates in [("datetime", pd.to_datetime(frame["date"])),
                        ("date", pd.to_datetime(frame["date"]).dt.date)]:  # pyarrow's date32
        frame["date"] = dates
        path = str(tmp_path / f"{kind}.parquet")
        frame.to_parquet(path)
        env = FinRLEnv(split=None, data_path=path, indicators=("macd",))
        assert [str(d) for d in env.data.dates] == ["2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07"]


def test_zero_volume_and_a_high_below_low_are_accepted(tmp_path: Path) -> None:
    # A halted day trades nothing; a high below its low (vendor glitch) only moves high/low
    # indicators, and close (traded on) may lie anywhere: FinRL accepts both.
    rows = [list(r) for r in ROWS]
    rows[2][6] = 0  # volume
    rows[5][3], rows[5][4] = 18.5, 19.5  # high, low
    env = FinRLEnv(split=None, data_path=write_csv(tmp_path / "odd.csv", [tuple(r) for r in rows]),
                   indicators=("macd",))
    assert env.n_days == 4


def test_repeated_tickers_are_refused() -> None:
    with pytest.raises(InvalidDataError, match="tickers lists 'AAPL' more than once"):
        FinRLEnv(split="trade", tickers=["AAPL", "JPM", "AAPL"])


def test_bare_string_ticker_is_one_ticker() -> None:
    env = FinRLEnv(split="trade", tickers="AAPL")
    assert env.tickers == ["AAPL"] and env.action_space.shape == (1,)


def test_earliest_bad_row_is_reported_across_checks(tmp_path: Path) -> None:
    # A duplicate at row 3 comes before a zero close at row 8 (checked on another column).
    rows = ROWS[:2] + [ROWS[0]] + ROWS[2:]
    rows[7] = (*rows[7][:5], 0, *rows[7][6:])
    path = write_csv(tmp_path / "two.csv", rows)
    with pytest.raises(InvalidDataError, match=r"row 3 \(line 4\): column 'date' value '2021-01-04' "
                                               r"repeats a \(date, tic\) pair first seen on row 1"):
        FinRLEnv(split=None, data_path=path, indicators=("macd",))
    # Several problems on one row: the first column's (a later row's date is not it either).
    rows = [list(r) for r in ROWS]
    rows[4][2], rows[4][5] = "x", -1  # open, close of row 5
    rows[6][0] = "not-a-date"
    path = write_csv(tmp_path / "many.csv", [tuple(r) for r in rows])
    with pytest.raises(InvalidDataError, match=r"row 5 .*column 'open' value 'x' is not a finite number"):
        FinRLEnv(split=None, data_path=path, indicators=("macd",))


def test_missing_ticker_cell_is_an_empty_tic(tmp_path: Path) -> None:
    rows = [list(r) for r in ROWS]
    rows[3][1] = ""
    with pytest.raises(InvalidDataError, match=r"row 4 .*column 'tic' value .* is empty"):
        FinRLEnv(split=None, data_path=write_csv(tmp_path / "notic.csv", [tuple(r) for r in rows]),
                 indicators=("macd",))


def test_turbulence_is_computed_on_the_first_day_with_a_full_year_behind_it() -> None:
    close = load_market_data(split=None, tickers=("AAPL", "JPM", "XOM")).close[:254]
    exact = turbulence(close[:253])  # 252 days of history before day 252: FinRL computes it
    assert exact[252] > 0
    assert exact[252] == pytest.approx(turbulence(close)[252], rel=1e-9)


def test_a_users_file_is_traded_whole_by_default(tmp_path: Path) -> None:
    # split defaulted to "train" (2009–2015, the offline set's period) for a user's file too:
    # a file of other years was an empty window, and one spanning 2015–2016 lost its 2016 days.
    rows = [(f"2015-12-{d}",) + r[1:] for d, r in zip(("29", "29", "30", "30"), ROWS[:4])]
    rows += [(f"2016-01-0{d}",) + r[1:] for d, r in zip(("4", "4", "5", "5"), ROWS[4:])]
    path = write_csv(tmp_path / "span.csv", rows)
    env = FinRLEnv(data_path=path, indicators=("macd",))
    assert [str(d) for d in env.data.dates] == ["2015-12-29", "2015-12-30", "2016-01-04", "2016-01-05"]
    assert [str(d) for d in FinRLEnv(split="train", data_path=path, indicators=("macd",)).data.dates] \
        == ["2015-12-29", "2015-12-30"]
    assert len(FinRLEnv(split="trade", tickers=["AAPL"]).data.dates) == 1095
    assert str(FinRLEnv(tickers=["AAPL"]).data.dates[-1]) == "2015-12-31"  # the offline set: train


def test_a_bare_indicator_name_is_one_indicator() -> None:
    # tuple("macd") split it into letters: "indicator 'm' is unknown".
    env = FinRLEnv(split="trade", tickers=["AAPL", "JPM"], indicators="macd")
    assert env.observation_space.shape == (1 + 2 + 2 + 2,)
    assert env.data.indicators.shape[1] == 1


def test_generators_of_tickers_and_indicators_are_read_once() -> None:
    # The type check consumed them: tickers "is empty"; indicators silently none at all.
    env = FinRLEnv(split="trade", tickers=(t for t in ["JPM", "AAPL"]),
                   indicators=(n for n in ["macd", "rsi_30"]))
    assert env.tickers == ["JPM", "AAPL"]
    assert env.data.indicator_names == ("macd", "rsi_30")
    assert env.observation_space.shape == (1 + 2 + 2 + 2 * 2,)


@pytest.mark.parametrize("ticker", ["NA", "NULL", "None", "nan"])
def test_a_ticker_pandas_reads_as_missing_is_a_ticker(tmp_path: Path, ticker: str) -> None:
    # pandas' default missing-value words are real tickers too (Nano Labs trades as NA): the
    # file was refused with "column 'tic' value nan is empty".
    rows = [(r[0], ticker if r[1] == "AAA" else r[1], *r[2:]) for r in ROWS]
    path = write_csv(tmp_path / "na.csv", rows)
    env = FinRLEnv(split=None, data_path=path, indicators=("macd",))
    assert list(env.tickers) == sorted([ticker, "BBB"])
    same = FinRLEnv(split=None, data_path=write_csv(tmp_path / "aaa.csv", ROWS), indicators=("macd",))
    # Its prices are AAA's (observation: cash, then each ticker's close).
    assert env.reset(seed=0)[0][1 + env.tickers.index(ticker)] == \
        same.reset(seed=0)[0][1 + same.tickers.index("AAA")]


@pytest.mark.parametrize("kwargs, message", [
    # start= alone keeps the split's end: with the default split ('auto': 'train') it is 2015.
    ({"start": "2018-01-02"}, r"start='2018-01-02' is after end='2015-12-31': end is the last day of "
                              r"split='train' .*give end= too, or split=None"),
    ({"split": "trade", "end": "2010-01-04"}, r"start='2016-01-04' is after end='2010-01-04': start is "
                                              r"the first day of split='trade'; give start= too"),
    ({"split": None, "start": "2019-01-01", "end": "2018-01-01"}, r"is after end='2018-01-01': swap them"),
])
def test_a_start_after_the_end_is_named_with_where_each_came_from(kwargs, message) -> None:
    # It was "the window 2018-01-02..2015-12-31 holds 0 trading day(s)", naming no cause.
    with pytest.raises(InvalidDataError, match=message):
        load_market_data(tickers=["AAPL"], **kwargs)
