"""Empty numpy strings and structured scalars cross the wire (protocol 2 refused them): an
element of a numpy array of labels (``np.array(["", "left"])[0]``) in an info or an action is
an ordinary value locally, and it broke the whole reply, or a vector step's whole worker."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.protocol.wire import HEADER, decode, encode


def _round_trip(value):
    return decode(encode({"v": value})[HEADER.size:])["v"]


@pytest.mark.parametrize("value", [np.str_(""), np.bytes_(b""), np.array(["", "left"])[0],
                                   np.array([b"", b"ab"])[0]], ids=repr)
def test_an_empty_numpy_string_keeps_its_type(value) -> None:
    back = _round_trip(value)
    assert type(back) is type(value) and back == value
    assert _round_trip(np.str_("a")) == "a"  # the head cached for <U0 does not spoil <U1


def test_a_structured_numpy_scalar_crosses_as_its_items() -> None:
    value = np.array([("a", 1)], dtype=[("x", "U1"), ("y", "i4")])[0]
    assert tuple(_round_trip(value)) == ("a", 1)


def test_an_empty_numpy_string_action_reaches_a_single_and_a_vector_env() -> None:
    labels = np.array(["", "hi"])
    env = gym.make("OpenEnv/Echo-v0", provider="process")
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=2)
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step({"message": labels[0]})
        assert obs["echo"] == "" and reward == 0.0
        envs.reset(seed=0)
        obs, rewards, terminated, truncated, infos = envs.step({"message": labels})
        assert list(obs["echo"]) == ["", "hi"] and not truncated.any()
        assert "worker_restarted" not in infos
    finally:
        env.close()
        envs.close()
