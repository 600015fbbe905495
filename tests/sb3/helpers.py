"""Shared checks of the SB3 tests."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_same_step(got: tuple[Any, ...], want: tuple[Any, ...], where: object) -> None:
    """Assert two ``VecEnv.step`` results are the same: observations, rewards (and their
    dtype), dones, each env's info keys, ``terminal_observation`` and episode statistics."""
    obs, rewards, dones, infos = got
    want_obs, want_rewards, want_dones, want_infos = want
    np.testing.assert_array_equal(obs, want_obs)
    np.testing.assert_array_equal(rewards, want_rewards)
    assert rewards.dtype == want_rewards.dtype, where
    np.testing.assert_array_equal(dones, want_dones)
    for info, want_info in zip(infos, want_infos):
        assert info.keys() == want_info.keys(), where
        assert info.get("TimeLimit.truncated") == want_info.get("TimeLimit.truncated"), where
        if "terminal_observation" in want_info:
            np.testing.assert_array_equal(info["terminal_observation"], want_info["terminal_observation"])
        if "episode" in want_info:
            assert (info["episode"]["r"], info["episode"]["l"]) == (want_info["episode"]["r"],
                                                                    want_info["episode"]["l"]), where
