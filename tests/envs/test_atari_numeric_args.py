"""Atari-v0's numeric arguments of the wrong type or range are refused by name (the convention of
tests/envs/test_constructor_arg_types.py), not with ALE's bare pybind TypeError or, for
repeat_action_probability, silently taken as 1.0 (sticky forever: every action ignored)."""

from __future__ import annotations

import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from openenv_gym.envs.atari.env import AtariEnv, make_ale_env  # noqa: E402
from openenv_gym.errors import InvalidRequestError  # noqa: E402


@pytest.mark.parametrize("name", ["mode", "difficulty"])
@pytest.mark.parametrize("value", [-1, 1.0, "1", True])
def test_mode_and_difficulty_name_the_valid_ones(name: str, value) -> None:
    with pytest.raises(InvalidRequestError,
                       match=rf"{name} must be None .* got {value!r}; its modes are \[0, 1\], its difficulties \[0, 1, 2, 3\]"):
        make_ale_env("pong", **{name: value})


@pytest.mark.parametrize("value", [float("nan"), 1.5, -0.1, float("inf"), "0.25"])
def test_repeat_action_probability_is_a_probability(value) -> None:
    with pytest.raises(InvalidRequestError, match=r"repeat_action_probability must be a number in \[0, 1\]"):
        make_ale_env("pong", repeat_action_probability=value)


@pytest.mark.parametrize("kwargs, name", [({"max_num_frames_per_episode": 100.5}, "max_num_frames_per_episode"),
                                          ({"max_num_frames_per_episode": "100"}, "max_num_frames_per_episode"),
                                          ({"max_num_frames_per_episode": -5}, "max_num_frames_per_episode"),
                                          ({"preprocess": True, "noop_max": 2.5}, "noop_max"),
                                          ({"preprocess": True, "noop_max": "30"}, "noop_max"),
                                          ({"preprocess": True, "noop_max": True}, "noop_max")])
def test_other_counts_are_whole_numbers(kwargs, name) -> None:
    with pytest.raises(InvalidRequestError, match=f"^{name} must be a whole number >= 0"):
        make_ale_env("pong", **kwargs)


def test_valid_values_still_work() -> None:
    import numpy as np

    env = AtariEnv(game="pong", mode=np.int64(1), difficulty=0, repeat_action_probability=1,
                   max_num_frames_per_episode=0, preprocess=True, noop_max=0)
    assert env.reset(seed=0)[0].shape == (84, 84)
    env.close()


def test_worker_reports_mode_by_name() -> None:
    import gymnasium as gym

    import openenv_gym  # noqa: F401

    with pytest.raises(InvalidRequestError, match=r"mode must be None .*its modes are \[0, 1\]"):
        gym.make("OpenEnv/Atari-v0", provider="process", game="pong", mode=-1)
