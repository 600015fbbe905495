"""The server-side env contract's own checks (:mod:`openenv_gym.envs.base`)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.echo.env import EchoEnv


def test_checking_a_model_observation_gives_no_warning() -> None:
    # A model's int field (Echo's length, Coding's tests_passed) is a Python int, which
    # Box.contains warns about ("Casting input x to numpy array") before casting it.
    env = EchoEnv()
    obs, info = env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.check_output("reset", env.observation_to_wire(obs), info)
        obs, *_ = env.step(env.parse_action({"message": "héllo"}))
        env.check_output("step", env.observation_to_wire(obs), {})


@pytest.mark.parametrize("length", [-1, "abc", [1, 2], None])
def test_an_observation_outside_the_space_is_still_refused(length: object) -> None:
    env = EchoEnv()
    with pytest.raises(ValueError, match="outside its observation space"):
        env.check_output("reset", {"echo": "", "length": length}, {})


def test_a_process_worker_runs_under_pythonwarnings_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # Workers inherit the trainer's environment: with the warning, every reset failed.
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    env = gym.make("OpenEnv/Echo-v0", provider="process")
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step({"message": "hi"})
        assert obs["echo"] == "hi"
    finally:
        env.close()
