"""Bad input to construction: numpy values work, nonsense is refused at make time with a
typed error that names the argument, and nothing is left running.

Lives in tests/client/ (gym.make / make_vec / the timeouts of RemoteEnv and its spec)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.client.kwargs import name_misplaced_timeout
from openenv_gym.client.spec import call_timeout
from openenv_gym.errors import InvalidRequestError
from openenv_gym.providers.base import env_kwargs_json


def test_numpy_values_in_env_kwargs_reach_the_worker() -> None:
    assert env_kwargs_json({"a": np.int64(3), "b": np.float32(0.5), "c": np.array([2, 3])}) == \
        '{"a": 3, "b": 0.5, "c": [2, 3]}'
    with pytest.raises(TypeError, match="JSON-serializable"):
        env_kwargs_json({"a": object()})


def test_gym_make_takes_a_numpy_int_argument() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_steps=np.int64(2))
    try:
        env.reset(seed=0)
        assert env.step({"message": "a"})[3] is False
        assert env.step({"message": "a"})[3] is True  # truncated at max_steps=2
    finally:
        env.close()


def test_make_vec_takes_the_numpy_ints_it_validates() -> None:
    # num_envs and max_episode_steps as np.int64 passed the vector env's own checks, then
    # max_episode_steps failed on its way to the worker as a bare TypeError.
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=np.int64(2), env_id="CartPole-v1",
                        provider="process", max_episode_steps=np.int64(3), step_timeout=np.float32(30))
    try:
        envs.reset(seed=0)
        for _ in range(3):
            _, _, terminated, truncated, _ = envs.step(np.zeros(2, dtype=np.int64))
        assert (terminated | truncated).all()
    finally:
        envs.close()


@pytest.mark.parametrize("value", [float("inf"), 1e12, float("nan"), -1, True, "5"])
def test_a_timeout_a_socket_cannot_take_is_refused_by_name(value) -> None:
    # inf (or anything past ~9.2e9 s) passed the check, then every call raised a bare
    # OverflowError from socket.settimeout.
    with pytest.raises(InvalidRequestError, match="timeout must be a positive number of seconds"):
        call_timeout({}, value)
    with pytest.raises(InvalidRequestError, match="step_timeout"):
        gym.make_vec("OpenEnv/Echo-v0", 2, provider="process", step_timeout=value)


def test_numpy_timeouts_are_numbers() -> None:
    assert call_timeout({}, np.float32(5)) == 5.0 and call_timeout({}, np.int64(7)) == 7.0


def test_an_env_whose_longest_step_is_unbounded_gets_a_usable_deadline() -> None:
    assert call_timeout({"max_step_seconds": float("inf")}, None) < 1e9
    assert call_timeout({"max_step_seconds": 1e12}, None) < 1e9


def test_coding_max_timeout_inf_is_refused_at_make_not_at_the_first_call() -> None:
    with pytest.raises(InvalidRequestError, match="max_timeout must be a finite number"):
        gym.make("OpenEnv/Coding-v0", provider="process", max_timeout=float("inf"))


def test_a_mapping_with_keys_that_are_not_text_is_refused_by_name() -> None:
    # JSON turned {0: 1.0} into {"0": 1.0}: the env looked reward_map[0] up in vain.
    with pytest.raises(TypeError, match=r"the key 0 of env_kwargs\['opts'\]\['reward_map'\] would arrive as a str"):
        env_kwargs_json({"size": 3, "opts": {"reward_map": {0: 1.0}}})
    with pytest.raises(TypeError, match=r"the key True of env_kwargs\['rows'\]\[1\]"):
        env_kwargs_json({"rows": [{"a": 1}, {True: 2}]})
    assert env_kwargs_json({"m": {"0": 1.0}, "t": [1, 2]}) == '{"m": {"0": 1.0}, "t": [1, 2]}'


@pytest.mark.parametrize("make, given, note", [
    (lambda: gym.make("OpenEnv/Echo-v0", provider="process", step_timeout=5), "step_timeout",
     "(step_timeout= is gym.make_vec's limit on each call's wait; gym.make's is timeout=)"),
    (lambda: gym.make_vec("OpenEnv/Echo-v0", 2, provider="process", timeout=5), "timeout",
     "(timeout= is gym.make's limit on each call's wait; gym.make_vec's is step_timeout=)"),
], ids=["gym.make-step_timeout", "make_vec-timeout"])
def test_the_other_api_s_timeout_name_is_refused_naming_this_one_s(make, given, note) -> None:
    # The env refused it as its own argument ("unexpected keyword argument 'step_timeout'; it
    # takes max_steps, ..."), which did not say that gym.make's name for it is timeout=.
    with pytest.raises(InvalidRequestError) as refused:
        make()
    text = str(refused.value)
    assert f"unexpected keyword argument '{given}'" in text and text.endswith(note), text
    assert refused.value.unknown_arguments == (given,)  # the worker named it, apart from the text


@pytest.mark.parametrize("make, given, note", [
    (lambda: gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process", step_timeout=5),
     "step_timeout", "(step_timeout= is gym.make_vec's limit on each call's wait; gym.make's is timeout=)"),
    (lambda: gym.make_vec("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process", timeout=5),
     "timeout", "(timeout= is gym.make's limit on each call's wait; gym.make_vec's is step_timeout=)"),
], ids=["gym.make-step_timeout", "make_vec-timeout"])
def test_a_gym_v0_env_refusing_the_other_api_s_timeout_name_gets_the_note(make, given, note) -> None:
    # The served env's creator refused it inside the worker's gym.make: Gymnasium's TypeError,
    # as locally, with the argument named apart from its text (the worker reads the creator's
    # signature), so the note comes as for the envs of this package.
    with pytest.raises(TypeError) as refused:
        make()
    text = str(refused.value)
    assert f"unexpected keyword argument '{given}'" in text and note in text, text


@pytest.mark.parametrize("make, given", [
    (lambda env_id: gym.make("OpenEnv/Gym-v0", env_id=env_id, provider="process", step_timeout=5),
     "step_timeout"),
    (lambda env_id: gym.make_vec("OpenEnv/Gym-v0", 2, env_id=env_id, provider="process", timeout=5),
     "timeout"),
], ids=["gym.make-step_timeout", "make_vec-timeout"])
def test_an_error_that_only_quotes_the_refusal_gets_no_note(make, given) -> None:
    # The env takes the argument; its constructor failed on a bug of its own whose TypeError
    # quotes "unexpected keyword argument '<given>'". Matched by text, that got the note
    # "(step_timeout= is gym.make_vec's limit ...)", sending the caller to rename an argument
    # the env had taken.
    from tests.client.quoting_env import QUOTES_REFUSAL_ID

    with pytest.raises(TypeError) as raised:
        make(f"tests.client.quoting_env:{QUOTES_REFUSAL_ID}")
    text = str(raised.value)
    assert f"_connect() got an unexpected keyword argument '{given}'" in text, text
    assert "limit on each call's wait" not in text, text
    assert getattr(raised.value, "unknown_arguments", ()) == ()


def test_the_note_goes_by_the_refused_arguments_not_by_the_message() -> None:
    quoted = InvalidRequestError("cannot make env 'x': got an unexpected keyword argument 'step_timeout'")
    name_misplaced_timeout(quoted, {"step_timeout": 5}, "gym.make")
    assert "limit on each call's wait" not in str(quoted)  # as from a worker that names none
    refused = InvalidRequestError("cannot make env 'x': no such argument", unknown_arguments=["step_timeout"])
    name_misplaced_timeout(refused, {"step_timeout": 5}, "gym.make")
    assert str(refused).endswith("gym.make's is timeout=)")
    assert refused.unknown_arguments == ("step_timeout",)  # kept by the rewording


def test_an_env_that_takes_step_timeout_itself_gets_it_from_gym_make() -> None:
    env = gym.make("OpenEnv/Coding-v0", provider="process", step_timeout=5)  # the sandbox's limit
    env.close()
