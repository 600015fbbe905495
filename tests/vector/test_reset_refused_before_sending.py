"""A reset whose options the wire cannot carry (an object) is refused with a ``TypeError``
before anything is sent, as a single env's is, and the vector env stays as it was: its
episodes run on and its seeds are kept. It was taken for a reset cut short after sending, so
the next step raised ResetNeededError ("the last step or reset was interrupted before its
results were all taken ... call reset()")."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers OpenEnv/*)


def test_a_reset_refused_before_sending_leaves_the_episodes_running() -> None:
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", max_steps=3)
    try:
        envs.reset(seed=[1, 2])
        envs.step({"message": np.array(["a", "b"])})
        envs.step({"message": np.array(["a", "b"])})
        with pytest.raises(TypeError, match="over the wire"):
            envs.reset(seed=7, options={"note": object()})
        obs, _, terminated, truncated, _ = envs.step({"message": np.array(["ab", "c"])})
        assert list(obs["echo"]) == ["ab", "c"]
        # The third step of the episodes the first reset began: Echo's max_steps ends them.
        assert truncated.all() and not terminated.any()
        assert envs.unwrapped._last_seeds == [1, 2]  # the refused reset's seed was not used
    finally:
        envs.close()
