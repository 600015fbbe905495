"""RemoteVecEnv's metadata carries the served env's (``render_fps``), as the sub-env metadata
DummyVecEnv and SubprocVecEnv hand to VecVideoRecorder does."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("stable_baselines3")

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402


def test_metadata_has_the_served_env_s_render_fps() -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process",
                        render_mode="rgb_array")
    try:
        assert venv.metadata["render_fps"] == gym.make("CartPole-v1").metadata["render_fps"] == 50
        assert "rgb_array" in venv.metadata["render_modes"]
        assert "autoreset_mode" not in venv.metadata  # the vector env's, not the served env's
    finally:
        venv.close()

