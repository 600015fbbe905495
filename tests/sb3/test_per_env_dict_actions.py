"""RemoteVecEnv takes SB3's actions, one per env (``actions[i]`` is env i's), in a space without
an array column (Dict holding Text), as DummyVecEnv does: it passed the list on to the
Gymnasium vector env, which refused it ("a Dict space takes a dict of per-env values")."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor  # noqa: E402

from openenv_gym.errors import InvalidActionError  # noqa: E402
from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from tests.sb3.helpers import assert_same_step  # noqa: E402
from tests.vector.toy_envs import DICT_ACT_ID as ENV_ID, served  # noqa: E402


def _remote() -> RemoteVecEnv:
    return RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id=served(ENV_ID),
                        provider="process")


def test_per_env_dict_actions_step_as_on_dummy_vec_env() -> None:
    remote = VecMonitor(_remote())
    local = VecMonitor(DummyVecEnv([lambda: gym.make(ENV_ID)] * 2))
    try:
        np.testing.assert_array_equal(remote.reset(), local.reset())
        for t in range(7):  # episodes truncate after 3 steps: terminal_observation, episode stats
            actions = [{"word": "ab"[: 1 + t % 2], "choice": t % 3}, {"word": "cab", "choice": 2}]
            if t == 5:  # an object array of them, as np.array(list_of_dicts) gives
                actions = np.array(actions, dtype=object)
            assert_same_step(remote.step(actions), local.step(actions), t)
        # Gymnasium's batched form still works.
        _, rewards, _, _ = remote.step({"word": ("a", "ab"), "choice": (0, 1)})
        assert rewards.tolist() == [1.0, 3.0]
    finally:
        remote.close()
        local.close()


def test_per_env_action_without_a_required_field_is_refused_as_its_env_refuses_it() -> None:
    # Each env's dict is checked as that env's own action: a field the space requires is
    # refused by env (envs may still differ in optional fields: test_per_env_optional_fields).
    venv = _remote()
    try:
        venv.reset()
        with pytest.raises(InvalidActionError, match=r"env 1: action \{'word': 'b'\} is not in the "
                                                     "action space.*no env stepped"):
            venv.step([{"word": "a", "choice": 1}, {"word": "b"}])
        _, rewards, _, _ = venv.step([{"word": "a", "choice": 1}, {"word": "b", "choice": 0}])
        assert rewards.tolist() == [2.0, 1.0]  # nothing stepped before: usable as it was
    finally:
        venv.close()
