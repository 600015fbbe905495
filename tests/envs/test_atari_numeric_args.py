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


@pytest.mark.parametrize("screen_size", [100_000, 1025, [84, 100_000], 0, -84, 84.0, True, "84", [84], [1, 2, 3]])
def test_screen_size_is_refused_by_name_outside_a_sane_range(screen_size) -> None:
    # 100000 made AtariPreprocessing allocate ~10 GB at make (its buffers and its space's bounds).
    with pytest.raises(InvalidRequestError, match=r"^screen_size must be a whole number, or a \(width, "
                                                  r"height\) pair of them, in 1\.\.1024 .*got "):
        make_ale_env("pong", preprocess=True, screen_size=screen_size)


@pytest.mark.parametrize("frame_stack", [100_000, 65])
def test_frame_stack_is_refused_by_name_above_a_sane_bound(frame_stack) -> None:
    with pytest.raises(InvalidRequestError, match=rf"^frame_stack must be a whole number >= 1 and <= 64 .*got {frame_stack}"):
        make_ale_env("pong", preprocess=True, frame_stack=frame_stack)


@pytest.mark.parametrize("noop_max", [10**9, 10_001])
def test_noop_max_is_refused_by_name_above_a_sane_bound(noop_max) -> None:
    # Each no-op start is one emulated frame at reset: 10**9 made every reset run for hours.
    with pytest.raises(InvalidRequestError, match=rf"^noop_max must be a whole number >= 0 and <= 10000 .*got {noop_max}"):
        make_ale_env("pong", preprocess=True, noop_max=noop_max)


@pytest.mark.parametrize("kwargs", [{"frameskip": 10**8}, {"frameskip": 10_001}, {"frameskip": [2, 10**8]},
                                    {"frameskip": 10**8, "preprocess": True}])
def test_frameskip_is_refused_by_name_above_a_sane_bound(kwargs) -> None:
    # Each skipped frame is emulated within the step: 10**8 made one step run for hours.
    with pytest.raises(InvalidRequestError, match=r"^frameskip must be at most 10000 frames a step .*got "):
        make_ale_env("pong", **kwargs)


def test_sizes_within_the_bounds_still_work() -> None:
    import numpy as np

    env = make_ale_env("pong", preprocess=True, noop_max=np.int64(10_000))
    assert env.noop_max == 10_000
    env.close()

    env = make_ale_env("pong", preprocess=True, screen_size=np.int64(1024), noop_max=0)
    assert env.observation_space.shape == (1024, 1024)
    env.close()
    env = make_ale_env("pong", frameskip=np.int64(10_000))
    assert env.unwrapped._frameskip == 10_000
    env.close()
    env = make_ale_env("pong", frameskip=[9_999, 10_000])
    assert env.unwrapped._frameskip == (9_999, 10_000)
    env.close()
    env = make_ale_env("pong", preprocess=True, frame_stack=64, noop_max=0)
    assert env.observation_space.shape == (64, 84, 84)
    env.close()
    env = make_ale_env("pong", preprocess=True, screen_size=[160, 210], grayscale_obs=False, noop_max=0)
    assert env.reset(seed=0)[0].shape == (210, 160, 3)
    env.close()


def test_worker_refuses_a_huge_screen_size_at_make() -> None:
    import gymnasium as gym

    import openenv_gym  # noqa: F401

    with pytest.raises(InvalidRequestError, match=r"screen_size must be .* in 1\.\.1024 .*got 100000"):
        gym.make("OpenEnv/Atari-v0", provider="process", game="pong", preprocess=True, screen_size=100_000)


def test_worker_refuses_a_huge_noop_max_at_make() -> None:
    import gymnasium as gym

    import openenv_gym  # noqa: F401

    with pytest.raises(InvalidRequestError, match=r"noop_max must be .* <= 10000 .*got 1000000000"):
        gym.make("OpenEnv/Atari-v0", provider="process", game="pong", preprocess=True, noop_max=10**9)


def test_worker_refuses_a_huge_frameskip_at_make() -> None:
    import gymnasium as gym

    import openenv_gym  # noqa: F401

    with pytest.raises(InvalidRequestError, match=r"frameskip must be at most 10000 .*got 100000000"):
        gym.make("OpenEnv/Atari-v0", provider="process", game="pong", frameskip=10**8)


@pytest.mark.parametrize("game", ["backgammon", "video_checkers"])
def test_no_op_starts_on_a_game_whose_action_0_is_not_noop_are_refused_by_name(game) -> None:
    # Their minimal action sets start with FIRE: Gymnasium's wrapper refused with a bare ValueError.
    with pytest.raises(InvalidRequestError, match=rf"action 0, which is FIRE in '{game}'.*set noop_max=0, or full_action_space=True"):
        make_ale_env(game, preprocess=True)
    for fix in ({"noop_max": 0}, {"full_action_space": True}):
        env = make_ale_env(game, preprocess=True, **fix)
        assert env.reset(seed=0)[0].shape == (84, 84)
        env.close()
