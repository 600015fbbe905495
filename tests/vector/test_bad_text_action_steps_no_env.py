"""A vector step in which one env's text or mapping action is refused steps no env at all, as
for array actions: the trainer checks each env's action the way its worker does before it
sends any (``action_check`` in the worker's spec), and refuses nothing the worker would take."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.envs.echo.env import MAX_MESSAGE
from openenv_gym.errors import InvalidActionError
from tests.vector.toy_envs import DICT_ACT_ID as ENV_ID, served

DICT_ID = served(ENV_ID)


def step_counts(envs) -> list[int]:
    return [state["step_count"] for state in envs.call("state")]


@pytest.mark.parametrize("envs_per_worker", [1, 2])
@pytest.mark.parametrize("bad", [None, 5, "x" * (MAX_MESSAGE + 1), b"\xff"],
                         ids=["none", "int", "too_long", "not_utf8"])
def test_bad_echo_message_steps_no_env(envs_per_worker: int, bad) -> None:
    with gym.make_vec("OpenEnv/Echo-v0", num_envs=3, provider="process",
                      envs_per_worker=envs_per_worker, max_steps=2) as envs:
        envs.reset(seed=0)
        with pytest.raises(InvalidActionError, match=r"env 1: invalid EchoAction: message: .*; no env stepped"):
            envs.step({"message": ("ok", bad, "ok")})
        assert step_counts(envs) == [0, 0, 0]
        # Nothing stepped: the next step is each env's first of max_steps=2 (not truncated).
        obs, rewards, terminated, truncated, _ = envs.step({"message": ("a", "bb", "")})
        assert obs["echo"] == ("a", "bb", "") and not truncated.any()
        assert np.allclose(rewards, [0.1, 0.2, 0.0])


def test_what_a_worker_takes_is_not_refused_before_sending() -> None:
    # gym.spaces.Dict.contains would refuse all of these (a missing field with a default,
    # bytes for text, a numpy bool); the worker's pydantic model takes them.
    with gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=2) as envs:
        envs.reset(seed=0)
        assert envs.step({"message": (b"ab", np.str_("c"))})[0]["echo"] == ("ab", "c")
        assert envs.step({"message": ("é✓\n", "x" * MAX_MESSAGE)})[1].round(1).tolist() == [0.3, 6553.6]


def test_an_env_being_reset_is_not_checked() -> None:
    # Env 0's episode ends (max_steps=1): its next action is ignored (NEXT_STEP autoreset),
    # so a bad one there refuses nothing, as for array actions.
    with gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", max_steps=1) as envs:
        envs.reset(seed=0)
        assert envs.step({"message": ("a", "b")})[3].all()
        _, rewards, terminated, truncated, _ = envs.step({"message": (None, 7)})
        assert rewards.tolist() == [0.0, 0.0] and not (terminated | truncated).any()
        with pytest.raises(InvalidActionError, match="env 0: .*no env stepped"):
            envs.step({"message": (None, "b")})


def test_unknown_field_is_refused_not_dropped() -> None:
    # A single env refuses {"message": "a", "mesage": "b"} (extra="forbid"): a vector env
    # dropped the misspelt field and stepped every env.
    with gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=2) as envs:
        envs.reset(seed=0)
        with pytest.raises(InvalidActionError, match="no field 'mesage'"):
            envs.step({"message": ("a", "b"), "mesage": ("c", "d")})
        assert step_counts(envs) == [0, 0]


def test_bad_coding_action_steps_no_env() -> None:
    with gym.make_vec("OpenEnv/Coding-v0", num_envs=2, provider="process") as envs:
        assert envs.envs_per_worker == 1  # a sandbox each: one worker per env
        envs.reset(seed=0)
        with pytest.raises(InvalidActionError, match=r"env 1: invalid CodeAction: timeout: .*no env stepped"):
            envs.step({"code": ("print(1)", "print(2)"), "timeout": (5.0, -1.0)})
        with pytest.raises(InvalidActionError, match=r"env 0: invalid CodeAction: code: .*no env stepped"):
            envs.step({"code": (None, "print(2)")})
        assert step_counts(envs) == [0, 0]
        obs, rewards, *_ = envs.step({"code": ("print(1)", "print(2)")})  # timeout left to its default
        assert obs["stdout"] == ("1\n", "2\n") and rewards.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("env_id, field, source", [("OpenEnv/Coding-v0", "code", "print(1)"),
                                                   ("OpenEnv/Git-v0", "command", "echo 1")],
                         ids=["coding", "git"])
def test_a_timeout_that_is_no_finite_number_steps_no_env(env_id: str, field: str, source: str) -> None:
    # Refused before sending, in the worker's words: NaN and inf as no finite number (not as
    # "less than or equal to 3600"), "1" and True as no number (the worker took them as 1.0).
    with gym.make_vec(env_id, num_envs=2, provider="process") as envs:
        assert envs.remote_spec.get("action_check") == "schema"
        envs.reset(seed=0)
        for bad, why in [(float("nan"), "finite number"), (np.float32("inf"), "finite number"),
                         ("1", "valid number"), (True, "valid number")]:
            with pytest.raises(InvalidActionError, match=rf"env 1: invalid \w+Action: timeout: Input should "
                                                         rf"be a {why}; no env stepped"):
                envs.step({field: (source, source), "timeout": (np.float32(2), bad)})
        assert step_counts(envs) == [0, 0]
        *_, terminated, truncated, _ = envs.step({field: (source, source), "timeout": (np.float32(2), 1)})
        assert step_counts(envs) == [1, 1] and not (terminated | truncated).any()


@pytest.mark.parametrize("envs_per_worker", [1, 2])
def test_bad_dict_text_action_of_a_gym_env_steps_no_env(envs_per_worker: int) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=DICT_ID, provider="process",
                        envs_per_worker=envs_per_worker)
    local = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync")
    try:
        envs.reset(seed=0)
        local.reset(seed=0)
        for bad in ({"word": ("ab", "abcd!"), "choice": (0, 1)},     # not in the charset
                    {"word": ("ab", "abcab"), "choice": (0, 1)},     # too long
                    {"word": ("ab", "a"), "choice": (0, 3)}):        # choice outside Discrete(3)
            with pytest.raises(InvalidActionError, match="env 1: action .* is not in the action space .*no env stepped"):
                envs.step(bad)
        good = {"word": (np.str_("ab"), "c"), "choice": np.array([2, 0])}
        for got, want in zip(envs.step(good)[:4], local.step(good)[:4]):
            np.testing.assert_array_equal(got, want)
    finally:
        envs.close()
        local.close()


def test_workers_say_how_their_actions_are_checked() -> None:
    # "schema": a plain pydantic model (Echo); "space": contains() of a Gym env's own space.
    for env_id, kwargs, want in (("OpenEnv/Echo-v0", {}, "schema"),
                                 ("OpenEnv/Gym-v0", {"env_id": DICT_ID}, "space")):
        with gym.make_vec(env_id, num_envs=1, provider="process", **kwargs) as envs:
            assert envs.remote_spec.get("action_check") == want
