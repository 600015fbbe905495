"""A fork taken while the parent's vector env has a step in flight (``step_async`` sent, its
``step_wait`` not yet called; e.g. a DataLoader forked from another thread): the child's copy
of that pending step is not the child's to gather (the replies go to the parent's
connections), so its ``step_wait`` says to reset, as its ``step`` does, instead of reporting
a worker failure ("no request in flight"); its reset starts episodes of its own, and the
parent gathers its step unharmed."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import in_forked_child

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _run(envs: RemoteVectorEnv, steps: range) -> list[list[float]]:
    return [envs.step(np.full(2, k % 2, dtype=np.int64))[0].round(6).tolist() for k in steps]


def test_a_child_forked_during_a_pending_step_does_not_gather_it() -> None:
    ref = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1)
    try:
        ref.reset(seed=3)
        expected = _run(ref, range(4))
    finally:
        ref.close()
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1)
    try:
        envs.reset(seed=3)
        envs.step_async(np.zeros(2, dtype=np.int64))

        def child() -> None:
            with pytest.raises(gym.error.ResetNeeded, match="forked child"):
                envs.step_wait()
            envs.reset(seed=7)  # episodes of the child's own
            envs.step(np.ones(2, dtype=np.int64))
            envs.close()

        assert in_forked_child(child) == 0
        got = [envs.step_wait()[0].round(6).tolist()] + _run(envs, range(1, 4))
        assert got == expected, "the child's calls changed the parent's envs"
    finally:
        envs.close()
