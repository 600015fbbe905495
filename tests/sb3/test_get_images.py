"""RemoteVecEnv's ``get_images`` gives frames only under ``render_mode="rgb_array"``, as
DummyVecEnv's and SubprocVecEnv's: under another mode a ``None`` per env and SB3's warning.
It handed back what the workers' ``render()`` gave (ansi text for ``render_mode="ansi"``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

import openenv_gym  # noqa: F401, E402  (registers the ids)
from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402


@pytest.mark.parametrize("render_mode", ["ansi", None])
def test_get_images_without_rgb_array_gives_none_and_warns_as_dummy_vec_env(render_mode) -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="FrozenLake-v1", provider="process",
                        render_mode=render_mode)
    ref = DummyVecEnv([lambda: gym.make("FrozenLake-v1", render_mode=render_mode)] * 2)
    try:
        venv.reset()
        ref.reset()
        with pytest.warns(UserWarning, match="assumes it is `rgb_array`") as got:
            images = venv.get_images()
        with pytest.warns(UserWarning, match="assumes it is `rgb_array`") as want:
            assert images == ref.get_images() == [None, None]
        assert [str(w.message) for w in got] == [str(w.message) for w in want]
    finally:
        venv.close()
        ref.close()


def test_get_images_with_rgb_array_gives_each_env_s_frame() -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="FrozenLake-v1", provider="process",
                        render_mode="rgb_array")
    ref = DummyVecEnv([lambda: gym.make("FrozenLake-v1", render_mode="rgb_array")] * 2)
    try:
        venv.seed(0)
        ref.seed(0)
        venv.reset()
        ref.reset()
        for got, want in zip(venv.get_images(), ref.get_images(), strict=True):
            np.testing.assert_array_equal(got, want)
    finally:
        venv.close()
        ref.close()
