"""Remote-vs-local Atari rollouts, shared by the Atari tests: the same seed and actions must
give the same frames, rewards, flags and lives."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def sample_actions(space: gym.Space, rng: np.random.Generator, n: int | None = None) -> Any:
    """Random actions of ``space`` (``n`` of them: a batch), as a trainer sends them."""
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(space.n, size=n) if n else int(rng.integers(space.n))
    shape = (n, *space.shape) if n else space.shape
    return rng.uniform(space.low, space.high, shape).astype(np.float32)


def assert_same_rollout(remote: gym.Env, local: gym.Env, seed: int, steps: int) -> None:
    """Reset both with ``seed`` and step them with the same random actions for ``steps`` steps
    (or to the episode's end), asserting equal spaces, frames, rewards, flags and lives."""
    assert remote.observation_space == local.observation_space
    assert remote.action_space == local.action_space
    a, ia = remote.reset(seed=seed)
    b, ib = local.reset(seed=seed)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    assert ia["lives"] == ib["lives"]
    rng = np.random.default_rng(seed)
    for t in range(steps):
        action = sample_actions(local.action_space, rng)
        ra, rb = remote.step(action), local.step(action)
        np.testing.assert_array_equal(ra[0], rb[0], err_msg=f"frame differs at step {t}")
        assert (ra[1], ra[2], ra[3]) == (float(rb[1]), rb[2], rb[3]), f"step {t}"
        assert ra[4]["lives"] == rb[4]["lives"] and ra[4]["frame_number"] == rb[4]["frame_number"]
        if ra[2] or ra[3]:
            break
