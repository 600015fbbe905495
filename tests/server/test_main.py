"""Making a worker's env: an env that cannot be made raises a typed error that names it."""

from __future__ import annotations

import importlib.util
import re

import pytest

from openenv_gym.errors import (
    EnvServerError,
    InvalidDataError,
    InvalidRequestError,
    ProviderUnavailableError,
    UnknownEnvironmentError,
)
from openenv_gym.server.main import build_service


@pytest.mark.parametrize("env, kwargs, error, message", [
    # Arguments the constructor does not take: listed with the ones it does, before it runs.
    ("echo", {"max_step": 5}, InvalidRequestError,
     "cannot make env 'echo' with {'max_step': 5}: got an unexpected keyword argument 'max_step'; "
     "it takes max_steps"),
    # A value the constructor rejects (ValueError) is a bad request too.
    ("echo", {"max_steps": 0}, InvalidRequestError, "cannot make env 'echo' with {'max_steps': 0}: max_steps must be >= 1"),
    # ale-py rejects with Gymnasium's Error.
    ("atari", {"obs_type": "rgbx"}, InvalidRequestError, "Invalid observation type: rgbx"),
    # Gym-v0's env_id that Gymnasium does not know.
    ("gym", {"env_id": "NoSuchEnv-v9"}, UnknownEnvironmentError, "Environment `NoSuchEnv` doesn't exist"),
    # The env's own typed errors keep their type.
    ("finrl", {"split": "val"}, InvalidDataError, "cannot make env 'finrl' with {'split': 'val'}: split='val' is unknown"),
])
def test_an_env_that_cannot_be_made_raises_a_typed_error_naming_it(env, kwargs, error, message) -> None:
    with pytest.raises(error, match=re.escape(message)) as raised:
        build_service(env, kwargs)
    assert type(raised.value) is error


def test_the_arguments_the_env_does_not_take_are_named_in_the_error() -> None:
    # bind's message names the first only; the field names each, apart from the wording.
    with pytest.raises(InvalidRequestError) as raised:
        build_service("echo", {"max_steps": 3, "step_timeout": 5, "bogus": 1})
    assert raised.value.unknown_arguments == ("step_timeout", "bogus")
    # A missing or rejected argument is no unknown one.
    with pytest.raises(InvalidRequestError) as raised:
        build_service("echo", {"max_steps": 0})
    assert raised.value.unknown_arguments == ()


@pytest.mark.skipif(importlib.util.find_spec("Box2D") is not None, reason="Box2D is installed here")
def test_a_gymnasium_env_whose_package_is_missing_names_the_install() -> None:
    with pytest.raises(ProviderUnavailableError, match=r"cannot make env 'gym'.*Box2D is not installed.*"
                                                       r"pip install.*in the worker's Python"):
        build_service("gym", {"env_id": "LunarLander-v3"})


def test_a_gymnasium_env_whose_module_is_missing_says_how_to_make_it_importable() -> None:
    with pytest.raises(ProviderUnavailableError, match=r"No module named 'nosuch_env_module'.*make that "
                                                       r"module importable.*PYTHONPATH") as raised:
        build_service("gym", {"env_id": "nosuch_env_module:Const-v0"})
    assert "'it'" not in str(raised.value)


def test_any_other_exception_is_an_env_server_error_and_still_that_exception() -> None:
    # CartPole takes no `bogus`: Gymnasium's make raises a TypeError, as it would locally.
    with pytest.raises(EnvServerError, match=re.escape("cannot make env 'gym' with")) as raised:
        build_service("gym", {"env_id": "CartPole-v1", "bogus": 1})
    assert isinstance(raised.value, TypeError) and "TypeError: " in str(raised.value)
    assert raised.value.unknown_arguments == ("bogus",)  # read off CartPole's signature
