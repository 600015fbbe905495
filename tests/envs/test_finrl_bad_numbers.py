"""FinRL-v0 refuses non-finite numbers at construction (tests/envs/)."""

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
