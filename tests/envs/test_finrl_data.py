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
    (3, "not-a-date", "date", "is not a date"),
    (2, "abc", "close", "is not a finite number"),
    (5, "-4", "close", "must be positive"),
])
def test_user_csv_bad_row_is_named(tmp_path: Path, row: int, value: str, column: str, problem: str) -> None:
    rows = [list(r) for r in ROWS]
    rows[row - 1][{"date": 0, "close": 5}[column]] = value
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
