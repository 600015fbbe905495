"""A Dict or Tuple action that does not fit says which part does not (a missing or extra key,
the item outside its own space), on a single env (the worker's check, over the binary path
and HTTP) and on a vector env (the client's check before the batch is sent): the whole
space's text left the reader to find it."""

from __future__ import annotations

import gymnasium as gym
import httpx
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidActionError
from openenv_gym.spaces import not_in_space
from tests.conftest import ServedEnv

BOX_IN_DICT = "tests.server.box_in_dict_env:OpenEnvTest/BoxInDict-v0"

#: action, where the message says it leaves the space.
BAD = [
    ({"choice": 1, "force": [5.0, 5.0]}, "at ['force']: [5.0, 5.0] is not in Box(-1.0, 1.0, (2,), float32)"),
    ({"choice": 3, "force": [0.0, 0.0]}, "at ['choice']: 3 is not in Discrete(3)"),
    ({"force": [0.0, 0.0], "push": 1}, "keys: missing 'choice'; unexpected 'push'"),
]


def test_not_in_space_names_the_part_of_a_nested_action() -> None:
    spaces = gym.spaces
    space = spaces.Tuple((spaces.Discrete(2), spaces.Dict({"b": spaces.MultiBinary(2)})))
    assert not_in_space((1, {"b": np.array([2, 0])}), space).endswith(
        ": at [1]['b']: [2, 0] is not in MultiBinary(2)")
    assert not_in_space((1,), space).endswith(": a sequence of 2 items is needed, got 1 items")
    assert not_in_space((1, 5), space).endswith(
        ": at [1]: a mapping with keys ['b'] is needed, got int")
    # A space of one part has nothing more to name.
    assert not_in_space(7, spaces.Discrete(2)) == "action 7 is not in the action space Discrete(2)"


@pytest.mark.parametrize("action, where", BAD)
def test_a_single_env_names_the_part_and_goes_on(action, where) -> None:
    env = gym.make("OpenEnv/Gym-v0", env_id=BOX_IN_DICT, provider="process")
    try:
        env.reset(seed=0)
        with pytest.raises(InvalidActionError) as refused:
            env.step(action)
        assert str(refused.value).endswith(where), refused.value
        assert env.step({"choice": 1, "force": np.array([0.5, 0.25], np.float32)})[1] == 0.75
    finally:
        env.close()


@pytest.mark.parametrize("action, where", BAD[:2])
def test_a_vector_env_names_the_part_before_sending(action, where) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=BOX_IN_DICT, provider="process")
    good = {"choice": 1, "force": [0.5, 0.25]}
    try:
        envs.reset(seed=0)
        batch = {k: np.array([good[k], action[k]]) for k in good}  # env 1's is the bad one
        with pytest.raises(InvalidActionError) as refused:
            envs.step(batch)
        assert str(refused.value).startswith("env 1: ") and f"{where}; no env stepped" in str(refused.value)
    finally:
        envs.close()


def test_http_names_the_part() -> None:
    server = ServedEnv("gym", "--env-kwargs", f'{{"env_id": "{BOX_IN_DICT}"}}')
    try:
        sid = httpx.post(f"{server.http}/reset", json={}, timeout=60).json()["session_id"]
        action, where = BAD[0]
        reply = httpx.post(f"{server.http}/step", json={"session_id": sid, "action": action}, timeout=60)
        assert reply.status_code == 422
        assert reply.json()["error"]["message"].endswith(where)
    finally:
        server.stop()
