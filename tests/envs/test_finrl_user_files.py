"""FinRL-v0 on users' own files: uneven panels, extra columns, ticker codes, and the
turbulence index's memory on wide universes."""

from __future__ import annotations

import os
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("stockstats")

from openenv_gym.envs.finrl import data as data_module  # noqa: E402
from openenv_gym.envs.finrl import indicators as indicators_module  # noqa: E402
from openenv_gym.envs.finrl.env import FinRLEnv  # noqa: E402
from openenv_gym.errors import InvalidDataError  # noqa: E402


def long_frame(tickers=("AAA", "BBB", "CCC"), days: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    dates = pd.bdate_range("2018-01-01", periods=days)
    frames = []
    for j, tic in enumerate(tickers):
        close = (50 + 10 * j) * np.cumprod(1 + rng.normal(0, 0.01, days))
        frames.append(pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "tic": tic, "open": close,
                                    "high": close * 1.01, "low": close * 0.99, "close": close,
                                    "volume": 1e6}))
    return pd.concat(frames).sort_values(["date", "tic"]).reset_index(drop=True)


def test_tickers_can_leave_out_a_ticker_listed_later_or_delisted(tmp_path: Path) -> None:
    frame = long_frame()
    later = (frame.tic == "CCC") & (frame.date < "2018-03-01")  # listed in March
    delisted = (frame.tic == "BBB") & (frame.date > "2018-05-01")  # gone after April
    uneven = tmp_path / "uneven.csv"
    frame[~later & ~delisted].to_csv(uneven, index=False)
    alone = tmp_path / "aaa.csv"
    frame[frame.tic == "AAA"].to_csv(alone, index=False)

    env = FinRLEnv(data_path=str(uneven), tickers=["AAA"])
    reference = FinRLEnv(data_path=str(alone))
    np.testing.assert_array_equal(env.data.dates, reference.data.dates)
    np.testing.assert_array_equal(env.data.close, reference.data.close)
    np.testing.assert_allclose(env.data.indicators, reference.data.indicators)
    # A ticker listed later trades from its first day, with indicators of its own history.
    ccc = FinRLEnv(data_path=str(uneven), tickers="CCC")
    assert str(ccc.data.dates[0]) == "2018-03-01" and np.isfinite(ccc.data.indicators).all()
    # Trading a ticker on dates it has no row is still refused, naming the date and ticker.
    with pytest.raises(InvalidDataError, match=r"date 2018-01-01 has no row for ticker\(s\) CCC"):
        FinRLEnv(data_path=str(uneven))
    with pytest.raises(InvalidDataError, match=r"date 2018-05-02 has no row for ticker\(s\) BBB"):
        FinRLEnv(data_path=str(uneven), tickers=["AAA", "BBB"])


def test_a_column_not_asked_for_may_have_gaps(tmp_path: Path) -> None:
    frame = long_frame()
    frame["dividend"] = np.where(np.arange(len(frame)) % 7 == 0, np.nan, 0.0)
    path = tmp_path / "dividends.csv"
    frame.to_csv(path, index=False)
    env = FinRLEnv(data_path=str(path))  # the default indicators do not read it
    assert np.isfinite(env.reset()[0]).all()
    with pytest.raises(InvalidDataError, match="column 'dividend' has missing or non-numeric values"):
        FinRLEnv(data_path=str(path), indicators=["dividend"])


def test_ticker_codes_keep_their_leading_zeros(tmp_path: Path) -> None:
    frame = long_frame(("000001", "600000", "0700"))
    path = tmp_path / "codes.csv"
    frame.to_csv(path, index=False)
    env = FinRLEnv(data_path=str(path), tickers=["000001", "0700"])
    assert env.tickers == ["000001", "0700"]


def test_ticker_codes_keep_their_leading_zeros_under_a_spaced_header(tmp_path: Path) -> None:
    # " tic" missed the dtype given for "tic": 000001 and 000002 came out as 1 and 2.
    path = tmp_path / "codes.csv"
    path.write_text(long_frame(("000001", "000002")).to_csv(index=False).replace("date,tic,", "date, tic ,", 1))
    assert FinRLEnv(data_path=str(path), indicators=[]).tickers == ["000001", "000002"]


def test_turbulence_is_not_computed_without_a_threshold(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "prices.csv"
    long_frame(days=300).to_csv(path, index=False)

    def refuse(close, *args, **kwargs):
        raise AssertionError("turbulence computed for an env that never reads it")

    monkeypatch.setattr(data_module, "turbulence", refuse)
    env = FinRLEnv(data_path=str(path), indicators=("macd",))
    obs, info = env.reset()
    assert not env.step(np.zeros(3, dtype=np.float32))[4]["turbulent"]
    monkeypatch.undo()
    env = FinRLEnv(data_path=str(path), indicators=("macd",), turbulence_threshold=1e9)
    assert env.data.turbulence[-1] > 0


def test_turbulence_memory_does_not_grow_with_days_times_stocks_squared(monkeypatch) -> None:
    # One (T, D, D) float64 array of this universe is 1200 * 60 * 60 * 8 bytes = 33 MiB.
    close = 100 * np.cumprod(1 + np.random.default_rng(0).normal(0, 0.01, (1200, 60)), axis=0)
    monkeypatch.setattr(indicators_module, "_CHUNK_BYTES", 1 << 20, raising=False)
    tracemalloc.start()
    try:
        indicators_module.turbulence(close)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 << 20, f"turbulence() peaked at {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("chunk_days", [1, 7, 10_000])
def test_turbulence_in_chunks_matches_finrls_loop(monkeypatch, chunk_days: int) -> None:
    close = 100 * np.cumprod(1 + np.random.default_rng(1).normal(0, 0.01, (400, 5)), axis=0)
    monkeypatch.setattr(indicators_module, "_CHUNK_BYTES", chunk_days * 8 * 5 * 5, raising=False)
    fast = indicators_module.turbulence(close)
    returns = pd.DataFrame(close).pct_change()
    for day in (252, 253, 254, 300, 399):
        hist = returns.iloc[day - 252: day].dropna()
        dev = (returns.iloc[day] - hist.mean()).to_numpy()
        assert fast[day] == pytest.approx(dev @ np.linalg.pinv(hist.cov().to_numpy()) @ dev, rel=1e-9)
    assert (fast[:252] == 0).all()


def test_a_parquet_indexed_by_date_and_tic_is_read(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    frame = long_frame()
    frame["date"] = pd.to_datetime(frame["date"])
    path = tmp_path / "indexed.parquet"
    frame.set_index(["date", "tic"]).to_parquet(path)
    env = FinRLEnv(data_path=str(path), indicators=["macd"])
    assert env.tickers == ["AAA", "BBB", "CCC"] and env.n_days == 120


def test_a_column_written_twice_is_named(tmp_path: Path) -> None:
    frame = long_frame()
    frame[" close"] = frame["close"]  # the same name once its spaces are stripped
    path = tmp_path / "twice.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidDataError, match=r"column\(s\) 'close' more than once"):
        FinRLEnv(data_path=str(path), indicators=["macd"])


@pytest.mark.parametrize("column", ["close", "macd"])
def test_a_column_written_twice_by_the_same_name_is_named(tmp_path: Path, column: str) -> None:
    # pandas read it as "close" and "close.1" and the first one was traded, without a word.
    frame = long_frame()
    frame["macd"] = 0.5
    frame["second"] = 1.0
    path = tmp_path / "twice.csv"
    text = frame.to_csv(index=False)
    path.write_text(text.replace("macd,second", f"macd,{column}", 1))
    with pytest.raises(InvalidDataError, match=rf"column\(s\) '{column}' more than once"):
        FinRLEnv(data_path=str(path), indicators=["macd"])


def test_a_text_column_asked_for_as_an_indicator_is_named_as_text(tmp_path: Path) -> None:
    # It was "indicator 'sector' is neither a column of the data nor a stockstats indicator".
    frame = long_frame()
    frame["sector"] = "tech"
    path = tmp_path / "sector.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidDataError, match=r"column 'sector' is asked for as an indicator but holds text"):
        FinRLEnv(data_path=str(path), indicators=["macd", "sector"])
    assert FinRLEnv(data_path=str(path), indicators=["macd"]).n_stocks == 3  # not asked for: ignored


def test_a_gap_in_an_indicator_column_is_named_by_ticker_and_date(tmp_path: Path) -> None:
    # It named the column only: in a file of 100k rows the gap was the user's to find.
    frame = long_frame()
    frame["macd"] = pd.Series(0.5, index=frame.index, dtype=object)  # room for a text value
    frame.loc[(frame.tic == "CCC") & (frame.date == "2018-02-01"), "macd"] = "n/a"
    frame.loc[(frame.tic == "BBB") & (frame.date == "2018-03-01"), "macd"] = np.nan
    path = tmp_path / "gap.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidDataError, match=r"column 'macd' has missing or non-numeric values, "
                                               r"the first for ticker CCC on 2018-02-01"):
        FinRLEnv(data_path=str(path), indicators=["macd"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_named_pipe_is_refused_instead_of_waiting_for_a_writer(tmp_path: Path) -> None:
    # Reading it blocked until something wrote to it: the worker hung at make time.
    path = tmp_path / "prices.csv"
    os.mkfifo(path)
    returned = threading.Event()

    def unblock_after_a_deadline() -> None:
        # A hang guard: on a hang, an empty write lets the read end, so the test fails, not hangs.
        if returned.wait(60):
            return
        fd = os.open(path, os.O_WRONLY)
        os.close(fd)

    guard = threading.Thread(target=unblock_after_a_deadline, daemon=True)
    guard.start()
    try:
        with pytest.raises(InvalidDataError, match=r"is not a regular file"):
            FinRLEnv(data_path=str(path), indicators=[])
    finally:
        returned.set()
        guard.join(65)


def test_a_parquet_dataset_directory_is_read(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    frame = long_frame()
    (tmp_path / "prices.parquet").mkdir()
    frame.iloc[:180].to_parquet(tmp_path / "prices.parquet" / "a.parquet")
    frame.iloc[180:].to_parquet(tmp_path / "prices.parquet" / "b.parquet")
    env = FinRLEnv(data_path=str(tmp_path / "prices.parquet"), indicators=["macd"])
    assert env.tickers == ["AAA", "BBB", "CCC"] and env.n_days == 120


def test_a_gap_in_the_turbulence_column_is_named_by_date(tmp_path: Path) -> None:
    # It named the column only, as indicator gaps once did.
    frame = long_frame()
    frame["turbulence"] = pd.Series(0.0, index=frame.index, dtype=object)
    frame.loc[frame.date == "2018-02-01", "turbulence"] = "n/a"
    frame.loc[frame.date == "2018-03-01", "turbulence"] = np.nan
    path = tmp_path / "turbulence.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidDataError, match=r"column 'turbulence' has missing or non-numeric values, "
                                               r"the first on 2018-02-01"):
        FinRLEnv(data_path=str(path), indicators=[], turbulence_threshold=100.0)


@pytest.mark.parametrize("kwargs, span", [({}, "the data holds 1 trading day"),
                                          ({"start": "2018-01-01"}, r"the window 2018-01-01\.\.\(last day\) holds 1")])
def test_a_file_of_one_date_is_named_without_none_bounds(tmp_path: Path, kwargs, span: str) -> None:
    # It was "the window None..None holds 1 trading day(s)".
    frame = long_frame(days=1)
    path = tmp_path / "one_day.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InvalidDataError, match=span) as info:
        FinRLEnv(data_path=str(path), indicators=[], **kwargs)
    assert "None" not in str(info.value) and "at least 2" in str(info.value)
