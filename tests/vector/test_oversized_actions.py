"""Actions that make a worker's step message larger than the wire's frame limit are refused in
the trainer with an :class:`InvalidActionError` naming the size and the limit, before anything
is sent (no env steps), as a single env's step refuses them; the vector env stays usable."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidActionError
from tests.vector.toy_envs import BIG_BOX_ID, SIZE, served

BIG_ID = served(BIG_BOX_ID)


def test_actions_over_the_frame_limit_are_refused_before_sending() -> None:
    # float64 rows travel inline in their own dtype (Gym-v0 takes them as sent): two 40 MB
    # rows in one worker's message, 80 MB, over the 64 MiB limit; each env's alone would fit.
    with gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=BIG_ID, provider="process",
                      envs_per_worker=2) as envs:
        envs.reset(seed=0)
        big = np.full((2, SIZE), 0.5)
        with pytest.raises(InvalidActionError,
                           match=r"too large: .*envs 0\.\.1 .* is 76\.3 MiB \(80000\d+ bytes\) as sent, "
                                 r"over the wire's frame limit of 64 MiB \(67108864 bytes\); "
                                 r"nothing was sent and no env stepped; fewer envs_per_worker"):
            envs.step(big)
        del big
        # No env stepped (its count starts at 1), and the connection is in frame.
        obs, rewards, *_ = envs.step(np.full((2, SIZE), 0.25, np.float32))
        assert obs.ravel().tolist() == [1.0, 1.0] and rewards.tolist() == [0.25, 0.25]
