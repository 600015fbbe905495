"""FinRL-v0 dates: a user file's ``date`` column of YYYYMMDD numbers (a Parquet int column,
or floats where it has a blank) is read by the same rule as its text form, row by row; and
``start``/``end`` are days, read by the same rule, never a year or month alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("stockstats")

from openenv_gym.envs.finrl.data import load_market_data  # noqa: E402
from openenv_gym.envs.finrl.env import FinRLEnv  # noqa: E402
from openenv_gym.errors import InvalidDataError  # noqa: E402
from tests.envs.test_finrl_accounting import write_csv  # noqa: E402

DAYS = ["2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07"]


def _frame(tmp_path: Path):
    """The accounting tests' rows (two tickers a day, eight rows) with YYYYMMDD text dates."""
    frame = pd.read_csv(write_csv(tmp_path / "plain.csv"), dtype={"date": str})
    frame["date"] = frame["date"].str.replace("-", "")
    return frame


def _parquet(tmp_path: Path, dates) -> str:
    frame = _frame(tmp_path)
    frame["date"] = dates
    path = str(tmp_path / "dates.parquet")
    frame.to_parquet(path)
    return path


def _env(path: str) -> FinRLEnv:
    return FinRLEnv(split=None, data_path=path, indicators=("macd",))


@pytest.mark.parametrize("dtype", ["int64", "int32", "Int64", "float64"])
def test_yyyymmdd_numbers_are_read_like_their_text(tmp_path: Path, dtype: str) -> None:
    # tushare's trade_date as an integer, as pandas reads 20210104 from a CSV and writes it on.
    text = _frame(tmp_path)
    from_text = _env(write_csv(tmp_path / "text.csv", list(text.itertuples(index=False))))
    from_numbers = _env(_parquet(tmp_path, text["date"].astype("int64").astype(dtype)))
    assert [str(d) for d in from_numbers.data.dates] == DAYS
    assert np.array_equal(from_numbers.data.dates, from_text.data.dates)
    assert np.array_equal(from_numbers.data.close, from_text.data.close)


@pytest.mark.parametrize("bad", [20201301, 20210230, 123, 2021, 1609718400, -20210106])
def test_a_number_that_is_not_a_yyyymmdd_date_is_refused_by_row(tmp_path: Path, bad: int) -> None:
    # Not a day (month 13, 30 February), too short (ISO alone reads 2021 as 2021-01-01), a
    # signed year or epoch seconds: the row is named, in a Parquet int column and as text.
    dates = _frame(tmp_path)["date"].astype("int64")
    dates[2] = bad
    for path, value in [(_parquet(tmp_path, dates), str(bad)),
                        (write_csv(tmp_path / "bad.csv", [(d, *r[1:]) for d, r in zip(
                            dates, _frame(tmp_path).itertuples(index=False))]), repr(str(bad)))]:
        with pytest.raises(InvalidDataError, match=rf"row 3 \(line 4\): column 'date' value "
                                                   rf"{value} is not an ISO date; write dates as YYYY-MM-DD"):
            _env(path)


def test_a_float_column_with_a_blank_refuses_only_the_blank_row(tmp_path: Path) -> None:
    # pandas makes a column of 20210104.0 floats when one date of a CSV is blank (and reads
    # a Parquet int column with nulls the same way): the whole floats are dates.
    dates = _frame(tmp_path)["date"].astype("float64")
    dates[5] = np.nan
    with pytest.raises(InvalidDataError, match=r"row 6 \(line 7\): column 'date' value nan is not an ISO"):
        _env(_parquet(tmp_path, dates))
    dates[5] = 20210106.5  # not a whole number: not a date either
    with pytest.raises(InvalidDataError, match=r"row 6 \(line 7\): column 'date' value 20210106.5 is not"):
        _env(_parquet(tmp_path, dates))



@pytest.mark.parametrize("kwargs, unit", [({"end": "2016-02"}, "month"), ({"start": "2016"}, "year"),
                                          ({"start": "2016", "end": "2016"}, "year")])
def test_a_year_or_month_alone_is_refused_not_read_as_its_first_day(kwargs, unit) -> None:
    # numpy reads '2016-02' as 2016-02-01: end='2016-02' ended the window on the month's first
    # day without a word, and start='2016', end='2016' held 0 trading days.
    name = next(iter(kwargs))
    with pytest.raises(InvalidDataError, match=rf"{name}='{kwargs[name]}' is a {unit} alone; {name} is one day"):
        load_market_data(split=None, **kwargs)


@pytest.mark.parametrize("start, end", [(20160104, "20160331"), ("2016/01/04", "2016/3/31"),
                                        ("2016-01-04 00:00:00-05:00", np.datetime64("2016-03-31"))])
def test_start_and_end_are_read_as_a_files_dates_are(start, end) -> None:
    # 20160104 was "a year alone" (numpy's year 20160104) and 2016/01/04 "not an ISO date",
    # while a file's date column takes both.
    data = load_market_data(split=None, start=start, end=end, tickers=["AAPL"])
    assert (str(data.dates[0]), str(data.dates[-1])) == ("2016-01-04", "2016-03-31")


def test_a_start_that_is_no_date_is_named() -> None:
    with pytest.raises(InvalidDataError, match=r"start='Jan 4 2016' is not a date written year first"):
        load_market_data(split=None, start="Jan 4 2016")
