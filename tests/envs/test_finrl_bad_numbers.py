"""FinRL-v0 refuses non-finite numbers and a fractional hmax at construction (tests/envs/)."""

from __future__ import annotations

import pytest

from openenv_gym.errors import InvalidDataError


@pytest.mark.parametrize("kwargs", [{"initial_amount": float("nan")}, {"initial_amount": float("inf")},
                                    {"reward_scaling": float("nan")}, {"reward_scaling": float("inf")},
                                    {"initial_amount": "1000"}])
def test_finrl_refuses_non_finite_numbers(kwargs) -> None:
    from openenv_gym.envs.finrl.env import FinRLEnv

    with pytest.raises(InvalidDataError, match=next(iter(kwargs))):
        FinRLEnv(split="trade", tickers=["AAPL", "JPM"], **kwargs)


@pytest.mark.parametrize("hmax", [1.9, 0, -5, True, "100"])
def test_finrl_refuses_an_hmax_that_is_not_a_whole_number_of_shares(hmax) -> None:
    # 1.9 was traded as 1 share a step without a word.
    from openenv_gym.envs.finrl.env import FinRLEnv

    with pytest.raises(InvalidDataError, match=r"hmax must be a whole number of shares >= 1, got "):
        FinRLEnv(split="trade", tickers=["AAPL", "JPM"], hmax=hmax)
    assert FinRLEnv(split="trade", tickers=["AAPL", "JPM"], hmax=7).hmax == 7
