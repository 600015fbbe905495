"""What openenv_gym/envs/atari/README.md says of terminal_on_life_loss (Gymnasium's, not SB3's
EpisodicLifeEnv): the episode ends at a lost life and the next reset starts a new game."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from openenv_gym.envs.atari.env import AtariEnv  # noqa: E402

def test_a_life_lost_ends_the_episode_and_reset_starts_a_new_game() -> None:
    env = AtariEnv(game="breakout", preprocess=True, terminal_on_life_loss=True)
    _, info = env.reset(seed=0)
    full = info["lives"]
    rng = np.random.default_rng(0)
    for _ in range(2):
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        assert terminated and info["lives"] == full - 1
        _, info = env.reset()
        assert info["lives"] == full  # a new game, not SB3's play-on with the lives left
    env.close()

