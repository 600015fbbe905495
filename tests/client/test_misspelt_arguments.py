"""A misspelt argument is refused naming the one meant: the env's own (``max_step=`` for Echo's
``max_steps=``, in the worker, so an HTTP ``serve`` says it too), ``gym.make``'s or
``gym.make_vec``'s (``provder=``, which reached the env and was refused with only "it takes
max_steps, frame_shape, render_mode"), and a provider option's (``forkk``). Before, no refusal
suggested a name; Gymnasium's own refusal of an env id does ("Did you mean: `CartPole`?")."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError
from openenv_gym.server.main import build_service


@pytest.mark.parametrize("env, given, meant", [("echo", "max_step", "max_steps"),
                                               ("atari", "gme", "game"),
                                               ("finrl", "tickrs", "tickers")])
def test_the_worker_names_the_env_argument_meant(env: str, given: str, meant: str) -> None:
    with pytest.raises(InvalidRequestError, match=rf"\(did you mean {meant}= for {given}=\?\)") as raised:
        build_service(env, {given: 1})
    assert raised.value.unknown_arguments == (given,)


def test_gym_make_names_its_own_keyword_meant() -> None:
    with pytest.raises(InvalidRequestError) as raised:
        gym.make("OpenEnv/Echo-v0", provider="process", provder="process")
    assert "(did you mean provider= for provder=? gym.make takes that itself)" in str(raised.value)
    assert raised.value.unknown_arguments == ("provder",)


def test_gym_make_vec_names_its_own_keyword_meant() -> None:
    with pytest.raises(InvalidRequestError, match=r"did you mean envs_per_worker= for envs_per_workr=\? "
                                                  r"gym.make_vec takes that itself"):
        gym.make_vec("OpenEnv/Echo-v0", 2, provider="process", envs_per_workr=2)


def test_a_name_like_none_gets_no_guess() -> None:
    with pytest.raises(InvalidRequestError) as raised:
        gym.make("OpenEnv/Echo-v0", provider="process", colour="red")
    assert "did you mean" not in str(raised.value)


def test_the_env_s_own_name_is_not_taken_for_gym_make_s() -> None:
    # max_step= is Echo's max_steps= misspelt, not gym.make's max_episode_steps=.
    with pytest.raises(InvalidRequestError) as raised:
        gym.make("OpenEnv/Echo-v0", provider="process", max_step=3)
    assert "did you mean max_steps= for max_step=?" in str(raised.value)
    assert "max_episode_steps" not in str(raised.value)


def test_a_misspelt_provider_option_is_named() -> None:
    with pytest.raises(TypeError, match=r"\(did you mean fork= for forkk=\?\)"):
        gym.make("OpenEnv/Echo-v0", provider="process", provider_options={"forkk": False})


@pytest.mark.parametrize("make, name", [(lambda **kw: gym.make("OpenEnv/Echo-v0", **kw), "timeout"),
                                        (lambda **kw: gym.make_vec("OpenEnv/Echo-v0", 2, **kw), "envs_per_worker")])
def test_the_maker_s_own_keyword_in_env_kwargs_is_named_as_such(make, name: str) -> None:
    # It said "did you mean timeout= for timeout=?": only env_kwargs= passes the name on.
    with pytest.raises(InvalidRequestError) as raised:
        make(provider="process", env_kwargs={name: 5})
    text = str(raised.value)
    assert f"{name}= is gym.make" in text and "as a keyword, not in env_kwargs" in text, text
    assert "did you mean" not in text, text
