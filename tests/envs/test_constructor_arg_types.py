"""A constructor argument of the wrong type is refused naming the argument and what it takes,
not with a bare TypeError from deep inside (an EnvServerError once through a worker)."""

from __future__ import annotations

import pytest

from openenv_gym.errors import InvalidDataError, InvalidRequestError


@pytest.mark.parametrize("frame_shape", [5, "abc", [-1, 3], [], [2.5, 3]])
def test_echo_frame_shape(frame_shape) -> None:
    from openenv_gym.envs.echo.env import EchoEnv

    with pytest.raises(ValueError, match=r"frame_shape must be a tuple of whole numbers >= 1"):
        EchoEnv(frame_shape=frame_shape)
    assert EchoEnv(frame_shape=[2, 3]).observation_space["frame"].shape == (2, 3)


@pytest.mark.parametrize("frame_stack", ["2", 2.5, 0, None])
def test_atari_frame_stack(frame_stack) -> None:
    pytest.importorskip("ale_py")
    from openenv_gym.envs.atari.env import make_ale_env

    with pytest.raises(InvalidRequestError, match=r"frame_stack must be a whole number >= 1"):
        make_ale_env("pong", preprocess=True, frame_stack=frame_stack)


@pytest.mark.parametrize("kwargs, name", [({"tickers": 5}, "tickers"), ({"tickers": [1, 2]}, "tickers"),
                                          ({"indicators": None}, "indicators"),
                                          ({"indicators": [3]}, "indicators"),
                                          ({"turbulence_threshold": "high"}, "turbulence_threshold"),
                                          ({"turbulence_threshold": float("nan")}, "turbulence_threshold")])
def test_finrl_argument_types(kwargs, name) -> None:
    pytest.importorskip("skfolio")
    from openenv_gym.envs.finrl.env import FinRLEnv

    with pytest.raises(InvalidDataError, match=f"^{name} must be"):
        FinRLEnv(split="trade", **{"tickers": ["AAPL", "JPM"], **kwargs})
    assert FinRLEnv(split="trade", tickers=["AAPL"], indicators=[]).observation_space.shape == (3,)


def test_worker_reports_the_argument_by_name() -> None:
    import gymnasium as gym

    import openenv_gym  # noqa: F401

    with pytest.raises(InvalidRequestError, match="frame_shape must be"):
        gym.make("OpenEnv/Echo-v0", provider="process", frame_shape=5)
