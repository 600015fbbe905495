"""Gym-v0 with an id that only the trainer's own module registers: the error says how to name
that module in the id (the worker imports what ``module:id`` names, as ``gym.make`` does)."""

from __future__ import annotations

import gymnasium as gym
import pytest

from openenv_gym.envs.gym.env import GymEnv


def test_an_unknown_id_names_the_module_form() -> None:
    with pytest.raises(gym.error.NamespaceNotFound, match=r"env_id='your_module:Mine/Thing-v0'"):
        GymEnv(env_id="Mine/Thing-v0")
    with pytest.raises(gym.error.NameNotFound, match=r"env_id='your_module:NoSuchEnv-v0'"):
        GymEnv(env_id="NoSuchEnv-v0")


def test_an_id_that_names_its_module_is_left_as_gymnasium_reports_it() -> None:
    with pytest.raises(gym.error.Error) as raised:  # the module imports; the id is still unknown
        GymEnv(env_id="json:NoSuchEnv-v0")
    assert "your_module" not in str(raised.value)


def test_a_missing_version_of_a_known_id_gets_no_module_hint() -> None:
    with pytest.raises(gym.error.VersionNotFound) as raised:
        GymEnv(env_id="CartPole-v9")
    assert "your_module" not in str(raised.value)
