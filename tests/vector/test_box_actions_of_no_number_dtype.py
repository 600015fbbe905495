"""A batch of Box actions that are no numbers (text, complex) is refused with a typed error
naming the dtype, before any env steps: text reached numpy's ``isfinite`` (a bare
``TypeError``), and complex actions were written into the float column without their
imaginary part (numpy's ComplexWarning only)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from tests.vector.vector_helpers import refused_and_no_env_stepped


@pytest.mark.parametrize("actions, dtype", [
    (np.array([["0.5"], ["0.5"]]), "<U3"),
    ([["0.5"], ["0.5"]], "<U3"),
    (np.array([[1 + 2j], [0]]), "complex128"),
])
def test_box_actions_that_are_no_numbers_are_refused_and_no_env_steps(actions: object, dtype: str) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="Pendulum-v1", provider="process",
                        envs_per_worker=1)
    try:
        envs.reset(seed=0)
        refused_and_no_env_stepped(envs, actions, f"must be numbers, got dtype {dtype}")
        envs.step(np.array([[0.5], [-0.5]]))  # the env goes on
    finally:
        envs.close()
