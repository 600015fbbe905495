"""FinRL-v0 before its first reset: on day 0 with all cash, as after a reset."""

from __future__ import annotations

import pytest

pytest.importorskip("stockstats")

from openenv_gym.envs.finrl.env import FinRLEnv  # noqa: E402
from tests.envs.test_finrl_accounting import write_csv  # noqa: E402


def test_state_before_the_first_reset_values_the_starting_cash(tmp_path) -> None:
    # The day-0 value was read from uninitialized memory (6.9e-310 seen) until a reset.
    env = FinRLEnv(split=None, data_path=write_csv(tmp_path / "small.csv"), indicators=("macd",),
                   initial_amount=12_345.0)
    before = env.state()
    assert before.total_asset == before.cash == 12_345.0
    env.reset(seed=0)
    assert env.state().total_asset == before.total_asset
