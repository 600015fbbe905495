"""Gymnasium's ``RecordVideo`` on a served env writes the video a local env writes: the same
episodes, frames, size and frame rate (the frames come from the worker's ``render()``, the rate
from the served env's metadata)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ale_py")
moviepy = pytest.importorskip("moviepy")
from gymnasium.wrappers import RecordVideo  # noqa: E402

import openenv_gym  # noqa: E402,F401  (registers the ids)

gym.register_envs(pytest.importorskip("ale_py"))

STEPS = 40


def record(env: gym.Env, folder: Path) -> None:
    """Two episodes of ``STEPS`` steps with seeded actions, every episode recorded."""
    env = RecordVideo(env, str(folder), episode_trigger=lambda episode: True, disable_logger=True)
    try:
        rng = np.random.default_rng(0)
        for episode in range(2):
            env.reset(seed=episode)
            for _ in range(STEPS):
                env.step(int(rng.integers(env.action_space.n)))
    finally:
        env.close()


def frames(path: Path) -> tuple[float, tuple[int, int], np.ndarray]:
    clip = moviepy.VideoFileClip(str(path))
    try:
        return clip.fps, tuple(clip.size), np.stack(list(clip.iter_frames()))
    finally:
        clip.close()


def test_record_video_of_a_served_env_equals_a_local_env_s(provider: str, tmp_path: Path) -> None:
    kwargs = dict(render_mode="rgb_array", max_episode_steps=STEPS)
    record(gym.make("OpenEnv/Atari-v0", provider=provider, game="pong", **kwargs), tmp_path / "remote")
    record(gym.make("ALE/Pong-v5", **kwargs), tmp_path / "local")
    names = sorted(p.name for p in (tmp_path / "remote").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "local").iterdir())
    assert names == ["rl-video-episode-0.mp4", "rl-video-episode-1.mp4"]
    for name in names:
        fps, size, remote = frames(tmp_path / "remote" / name)
        local_fps, local_size, local = frames(tmp_path / "local" / name)
        assert (fps, size) == (local_fps, local_size) == (30.0, (160, 210))
        assert len(remote) == STEPS + 1  # the reset's frame and one per step
        # Same seed and actions, same frames, same encoder: the decoded videos are equal.
        np.testing.assert_array_equal(remote, local)
