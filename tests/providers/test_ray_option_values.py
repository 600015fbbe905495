"""Bad values of the ray provider's options are refused when it is made, with a ValueError
naming the option: a negative timeout reached ``ray.get`` and Ray aborted the whole trainer
(SIGABRT from a C++ check, no exception), and NaN CPUs gave "cannot convert float NaN to integer"."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)

pytest.importorskip("ray")

from openenv_gym.providers.ray import RayProvider  # noqa: E402


@pytest.mark.parametrize("name", ["placement_timeout", "startup_timeout", "alive_timeout", "regroup_timeout"])
@pytest.mark.parametrize("value", [-5, -0.001, math.nan, math.inf, "10"])
def test_a_bad_timeout_is_a_value_error_naming_it(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name):
        RayProvider(**{name: value})


@pytest.mark.parametrize("options, name", [({"strategy": "BOGUS"}, "strategy"), ({"num_cpus": -1}, "num_cpus"),
                                           ({"isolation": "vm"}, "isolation"),
                                           ({"node_id": "n", "strategy": "PACK"}, "node_id")])
def test_a_bad_option_is_an_openenv_error_as_every_refused_argument_is(options, name) -> None:
    # A bare ValueError: `except openenv_gym.OpenEnvError` (the README's promise) missed it.
    from openenv_gym.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match=name):
        RayProvider(**options)


@pytest.mark.parametrize("options, message", [
    ({"strategy": 5}, "strategy must be one of"),
    ({"strategy": None}, "strategy must be one of"),
    ({"resources": {"CPU": 1}}, "num_cpus="),
    ({"resources": {"GPU": 1}}, "num_cpus="),
    ({"resources": {"docker": -1}}, r"resources\['docker'\] must be a number >= 0, got -1"),
    ({"resources": {"docker": "1"}}, r"resources\['docker'\] must be a number >= 0"),
    ({"resources": {"docker": math.nan}}, r"resources\['docker'\] must be a number >= 0"),
    ({"resources": "docker"}, "resources must be a dict"),
    ({"resources": {1: 1}}, "resources must be a dict"),
])
def test_a_bad_strategy_or_resources_is_refused_when_made(options, message) -> None:
    # Ray checked resources only when the first worker was placed (after starting a local
    # Ray) and raised its own bare ValueError/TypeError; a non-str strategy an AttributeError.
    from openenv_gym.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match=message):
        RayProvider(**options)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", 5, None])
def test_a_wildcard_or_non_text_host_is_refused_when_made(host: object) -> None:
    # 0.0.0.0 bound every interface of every node and gave the trainer tcp://0.0.0.0:PORT
    # (no worker from another host); 5 failed the actor's start with "expected str, ... not int".
    from openenv_gym.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="host must be '127.0.0.1' .*'node'.*interface"):
        RayProvider(host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "node", "localhost", "::1", "10.0.0.5"])
def test_an_interface_host_is_taken(host: str) -> None:
    assert RayProvider(host=host).host == host


@pytest.mark.parametrize("options, name", [({"address": 6379}, "address"), ({"init_kwargs": "x"}, "init_kwargs"),
                                           ({"docker_options": ["x"]}, "docker_options"),
                                           ({"runtime_env": "pip"}, "runtime_env"),
                                           ({"runtime_env": {1: "x"}}, "runtime_env")])
def test_an_option_of_the_wrong_type_is_refused_by_name(options, name) -> None:
    # address=6379 raised "expected string or bytes-like object, got 'int'", init_kwargs="x"
    # "dictionary update sequence element #0 has length 1"; runtime_env="pip" was refused by
    # Ray only at the first placement, after a local Ray had been started for it.
    from openenv_gym.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match=f"^{name} must be"):
        RayProvider(**options)


def test_good_custom_resources_are_taken() -> None:
    assert RayProvider(resources={"docker": 1, "slot": 0.5}).resources == {"docker": 1, "slot": 0.5}


def test_nan_cpus_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="num_cpus must be a number >= 0, got nan"):
        RayProvider(num_cpus=math.nan)


_TRAINER = """
import gymnasium as gym, ray, openenv_gym
try:
    gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"placement_timeout": -5,
             "address": "local", "init_kwargs": {"num_cpus": 1}})
except ValueError as exc:
    print("refused:", exc)
print("ray started:", ray.is_initialized())
"""


def test_gym_make_refuses_a_negative_placement_timeout_before_touching_ray() -> None:
    # In a child: before the fix the provider started a local Ray, then Ray aborted the process.
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _TRAINER], capture_output=True, text=True, timeout=180,
                         env=dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused: placement_timeout" in out.stdout and "ray started: False" in out.stdout, out.stdout


def test_zero_timeouts_are_still_taken() -> None:
    RayProvider(placement_timeout=0, alive_timeout=0, regroup_timeout=0, startup_timeout=0)


@pytest.mark.parametrize("address", ["nonsense", "host-without-port"])
def test_an_address_ray_cannot_parse_is_refused_naming_the_option(address: str) -> None:
    # Ray's own ValueError ("Invalid address format: nonsense") named no option.
    from openenv_gym.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match=r"provider_options\['address'\]=.*HOST:PORT"):
        gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"address": address})
