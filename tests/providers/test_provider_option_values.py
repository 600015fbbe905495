"""Bad values of the process and docker providers' options are refused when the provider is
made, with a ValueError (InvalidRequestError) naming the option: ``startup_timeout="60"``
failed the first start as a bare ``TypeError`` ("unsupported operand type(s) for +"), -1
started a worker only to give it up and advise more time, and ``fork="no"`` (true to Python)
forked anyway. The ray provider's are checked in test_ray_option_values.py."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError
from openenv_gym.providers.docker import DockerProvider
from openenv_gym.providers.process import ProcessProvider


@pytest.mark.parametrize("value", ["60", None, True, 0, -1, math.nan, math.inf])
@pytest.mark.parametrize("provider", [ProcessProvider, DockerProvider])
def test_a_bad_startup_timeout_is_refused_by_name(provider: type, value: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"provider_options\['startup_timeout'\] must be a positive"):
        provider(startup_timeout=value)


@pytest.mark.parametrize("name", ["fork", "cgroups", "private_tmp"])
@pytest.mark.parametrize("value", ["no", "False", 0, None])
def test_an_on_off_option_that_is_not_a_bool_is_refused_by_name(name: str, value: object) -> None:
    with pytest.raises(InvalidRequestError, match=rf"provider_options\['{name}'\] must be True or False"):
        ProcessProvider(**{name: value})


def test_docker_auto_build_that_is_not_a_bool_is_refused_by_name() -> None:
    with pytest.raises(InvalidRequestError, match=r"provider_options\['auto_build'\] must be True or False"):
        DockerProvider(auto_build="no")


@pytest.mark.parametrize("value", ["mem_limit=2g", [("mem_limit", "2g")]])
def test_container_options_that_are_not_a_mapping_are_refused_by_name(value: object) -> None:
    with pytest.raises(InvalidRequestError, match=r"provider_options\['container_options'\] must be a mapping"):
        ProcessProvider(container_options=value)


def test_numpy_values_are_taken() -> None:
    provider = ProcessProvider(startup_timeout=np.float64(30), fork=np.bool_(False))
    assert provider.startup_timeout == 30.0 and not provider.fork


def test_gym_make_refuses_a_bad_option_before_starting_a_worker() -> None:
    with pytest.raises(ValueError, match=r"provider_options\['startup_timeout'\]"):
        gym.make("OpenEnv/Echo-v0", provider="process", provider_options={"startup_timeout": "60"})
    env = gym.make("OpenEnv/Echo-v0", provider="process", provider_options={"startup_timeout": 30})
    try:
        env.reset(seed=0)
        assert env.step({"message": "hi"})[0]["echo"] == "hi"
    finally:
        env.close()
