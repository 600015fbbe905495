"""A vector env's float64 Box actions reach the served envs unrounded, as SyncVectorEnv's do."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401
from openenv_gym.errors import InvalidActionError
from tests.vector.vector_helpers import step_both


@pytest.mark.parametrize("shared_memory", [True, False])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_float64_actions_match_sync_vector_env(shared_memory: bool, mode: AutoresetMode) -> None:
    ours = gym.make_vec("OpenEnv/Gym-v0", 3, env_id="MountainCarContinuous-v0", provider="process",
                        envs_per_worker=2, shared_memory=shared_memory, autoreset_mode=mode,
                        max_episode_steps=15)
    local = gym.make_vec("MountainCarContinuous-v0", 3, vectorization_mode="sync",
                         vector_kwargs={"autoreset_mode": mode}, max_episode_steps=15)
    rng = np.random.default_rng(1)
    try:
        ours.reset(seed=0)
        local.reset(seed=0)
        for t in range(40):
            actions = rng.uniform(-3.0, 3.0, size=(3, 1))
            if t % 4 == 0:
                actions = actions.astype(np.float32)  # the column path still works alongside
            got, want = ours.step(actions), local.step(actions)
            for a, b in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(a, b)
        with pytest.raises(InvalidActionError, match="env 1"):
            ours.step(np.array([[0.0], [np.nan], [0.5]]))
    finally:
        ours.close()
        local.close()


@pytest.mark.parametrize("shared_memory", [True, False])
def test_list_actions_match_sync_vector_env(shared_memory: bool) -> None:
    # SyncVectorEnv hands each env its row of a list as given: Python numbers, which
    # MountainCarContinuous adds to its float32 state in float32. As an np.float64 (or int64)
    # row the same numbers turned its state float64, and most steps' observations differed.
    ours = gym.make_vec("OpenEnv/Gym-v0", 3, env_id="MountainCarContinuous-v0", provider="process",
                        envs_per_worker=2, shared_memory=shared_memory, max_episode_steps=15)
    local = gym.make_vec("MountainCarContinuous-v0", 3, vectorization_mode="sync",
                         max_episode_steps=15)
    rng = np.random.default_rng(2)
    try:
        ours.reset(seed=0)
        local.reset(seed=0)
        for t in range(40):
            rows: list[object] = [[float(x)] for x in rng.uniform(-3.0, 3.0, size=3)]
            if t % 4 == 1:
                rows[0] = [1]  # ints
            elif t % 4 == 2:
                rows[1] = (0.25,)  # a tuple
            elif t % 4 == 3:
                rows[2] = np.array([0.3], dtype=np.float32)  # an array among lists, as it is
            step_both(ours, local, rows, f"step {t}")
        with pytest.raises(InvalidActionError, match="env 2"):
            ours.step([[0.0], [0.5], [float("nan")]])  # refused before any env stepped
        step_both(ours, local, [[0.1], [0.2], [0.3]], "after the refused step")
    finally:
        ours.close()
        local.close()


def test_a_scalar_box_gets_its_numbers_unrounded() -> None:
    # Rows of a shape-() Box are bare numbers (np.float64 out of an array): the worker cast
    # them to the space's float32, where SyncVectorEnv hands each env its number as it is.
    from tests.vector.toy_envs import SCALAR_BOX_ID as ENV_ID, served

    ours = gym.make_vec("OpenEnv/Gym-v0", 2, env_id=served(ENV_ID),
                        provider="process")
    local = gym.make_vec(ENV_ID, 2, vectorization_mode="sync")
    try:
        ours.reset(seed=0)
        local.reset(seed=0)
        for actions in ([0.1, -2.3], (1e-3, 7), np.array([0.3, -0.7]), [np.float64(0.9), 2]):
            got, _ = step_both(ours, local, actions, repr(actions))
            assert got[1].tolist() == [float(x) for x in actions]  # not float32-rounded
        with pytest.raises(InvalidActionError, match="env 1"):
            ours.step([0.5, float("inf")])
    finally:
        ours.close()
        local.close()


def test_an_env_that_casts_its_actions_keeps_float64_rows_on_the_column() -> None:
    # FinRL casts every action to its float32 space (and checks the bounds there): float64
    # rows need not travel inline, and reach it exactly as the same rows in float32 would.
    envs = gym.make_vec("OpenEnv/FinRL-v0", 2, provider="process", split="train")
    gym_v0 = gym.make_vec("OpenEnv/Gym-v0", 2, env_id="MountainCarContinuous-v0", provider="process")
    try:
        assert "actions_as_sent" not in envs.remote_spec and gym_v0.remote_spec["actions_as_sent"]
        rows = np.random.default_rng(0).uniform(-1, 1, size=(2, 20))
        assert isinstance(envs._actions.for_column(envs._actions.batch(rows), rows), np.ndarray)  # the column, not rows
        assert isinstance(gym_v0._actions.for_column(gym_v0._actions.batch(rows[:, :1]), rows[:, :1]), list)
        # space.sample()'s float32 arrays in a list keep the column, as the same array would.
        samples = [gym_v0.single_action_space.sample() for _ in range(2)]
        assert isinstance(gym_v0._actions.for_column(gym_v0._actions.batch(samples), samples), np.ndarray)
        envs.reset(seed=3)
        wide = [envs.step(rows)[:4] for _ in range(3)]
        envs.reset(seed=3)
        narrow = [envs.step(rows.astype(np.float32))[:4] for _ in range(3)]
        for a, b in zip(wide, narrow):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
        with pytest.raises(InvalidActionError, match="env 0"):
            envs.step(np.full((2, 20), 1.5))  # out of bounds, refused as before
    finally:
        envs.close()
        gym_v0.close()
