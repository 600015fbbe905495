"""Env kwargs a local env takes as paths and dates reach a worker too (as text)."""

from __future__ import annotations

import datetime
from pathlib import Path

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.providers.base import env_kwargs_json


def test_paths_and_dates_become_text() -> None:
    assert env_kwargs_json({"p": Path("/data/prices.csv"), "d": datetime.date(2018, 3, 1),
                            "t": datetime.datetime(2018, 3, 1, 9, 30)}) == \
        '{"p": "/data/prices.csv", "d": "2018-03-01", "t": "2018-03-01T09:30:00"}'
    with pytest.raises(TypeError, match="JSON-serializable"):
        env_kwargs_json({"a": object()})


def test_finrl_takes_a_path_and_a_timestamp_through_a_worker(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("stockstats")
    from tests.envs.test_finrl_user_files import long_frame

    path = tmp_path / "prices.csv"
    long_frame().to_csv(path, index=False)
    env = gym.make("OpenEnv/FinRL-v0", provider="process", data_path=path,
                   start=pd.Timestamp("2018-03-01"), indicators=["macd"])
    try:
        assert env.reset(seed=0)[1]["date"] == "2018-03-01"
    finally:
        env.close()
