"""Env kwargs too long for a worker's command line are refused by size, naming the limit and
the fix, before anything starts: the worker's start failed as exec's bare ``OSError: [Errno 7]
Argument list too long: '.../python'``, naming no argument."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError
from openenv_gym.providers.base import env_kwargs_json


def test_kwargs_past_one_argument_s_limit_are_refused_by_size() -> None:
    with pytest.raises(InvalidRequestError, match=r"env kwargs are 240013 bytes as JSON, more than a worker's "
                                                  r"command line carries \(131071 bytes"):
        env_kwargs_json({"tickers": ["AAPL"] * 30000})


@pytest.mark.parametrize("fork", [True, False])
def test_gym_make_refuses_them_and_the_largest_that_fit_start(fork: bool) -> None:
    with pytest.raises(ValueError, match="as a file the env reads"):
        gym.make("OpenEnv/FinRL-v0", provider="process", provider_options={"fork": fork},
                 tickers=["AAPL"] * 30000)
    # 131053 bytes: a worker starts with them (and refuses the argument it does not take).
    with pytest.raises(InvalidRequestError, match="unexpected keyword argument 'pad'"):
        gym.make("OpenEnv/Echo-v0", provider="process", provider_options={"fork": fork},
                 pad=["AAPL"] * 16380)
