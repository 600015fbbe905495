"""render_mode='human' is refused where it would reach a worker (no display there); through
gym.make it still works, as Gymnasium's HumanRendering of the served rgb_array frames."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym
from openenv_gym.errors import InvalidRequestError


def test_remote_env_refuses_human_render_mode() -> None:
    with pytest.raises(InvalidRequestError, match="render_mode='human' cannot be served"):
        openenv_gym.RemoteEnv("gym", env_id="CartPole-v1", provider="process", render_mode="human")


def test_vector_env_refuses_human_render_mode() -> None:
    with pytest.raises(InvalidRequestError, match="render_mode='human' cannot be served"):
        gym.make_vec("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process",
                     render_mode="human")


def test_gym_make_human_still_renders_served_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process", render_mode="human")
    try:
        assert isinstance(env, gym.wrappers.HumanRendering)
        assert env.unwrapped.render_mode == "rgb_array"
        env.reset(seed=0)
        env.step(np.int64(0))
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["OpenEnv/Echo-v0", "OpenEnv/Git-v0"])
def test_gym_make_human_of_an_env_without_frames_names_the_mode_asked(env_id: str) -> None:
    # gym.make passes 'rgb_array' on for 'human'; the refusal named only that mode, which
    # the caller never gave ("render_mode='rgb_array' is not one of ['ansi']").
    with pytest.raises(InvalidRequestError) as raised:
        gym.make(env_id, provider="process", render_mode="human")
    text = str(raised.value)
    assert "for your render_mode='human'" in text and "HumanRendering" in text, text


def test_a_refused_rgb_array_asked_by_the_caller_gets_no_note() -> None:
    with pytest.raises(InvalidRequestError) as raised:
        gym.make("OpenEnv/Echo-v0", provider="process", render_mode="rgb_array")
    assert "render_mode='human'" not in str(raised.value)
