"""RemoteVectorEnv steps exactly like Gymnasium's SyncVectorEnv on the same local env.

Every autoreset mode, several seeds, short episodes (many resets), on real workers of
every provider; infos (incl. ``final_obs``/``final_info``) compared deeply.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.vector_helpers import MAX_STEPS, assert_same, local_sync, step_both

N = 4
STEPS = 45


def _remote(provider: str, mode: AutoresetMode, shared: bool) -> RemoteVectorEnv:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=N, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=2, autoreset_mode=mode, max_episode_steps=MAX_STEPS,
                        shared_memory=shared)
    assert isinstance(envs, RemoteVectorEnv)
    return envs


@pytest.mark.parametrize("shared", [True, False], ids=["shared-memory", "inline"])
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_trajectories_equal_sync_vector_env(provider: str, mode: AutoresetMode, shared: bool) -> None:
    remote, local = _remote(provider, mode, shared), local_sync(N, mode)
    try:
        assert all(piece.shared is shared for piece in remote.pool.slices)
        assert remote.metadata["autoreset_mode"] is mode
        assert remote.single_observation_space == local.single_observation_space
        assert remote.action_space == local.action_space
        ended = 0
        for seed in (0, 7, [11, None, 13, 14]):
            got, want = remote.reset(seed=seed), local.reset(seed=seed)
            if isinstance(seed, list):  # an unseeded env differs: reseed it the same way
                mask = np.array([False, True, False, False])
                got = remote.reset(seed=[0, 99, 0, 0], options={"reset_mask": mask})
                want = local.reset(seed=[0, 99, 0, 0], options={"reset_mask": mask})
            assert_same(got, want, f"reset seed={seed}")
            rng = np.random.default_rng(0 if isinstance(seed, list) else seed)
            for t in range(STEPS):
                _, want = step_both(remote, local, rng.integers(0, 2, N), f"seed={seed} t={t}")
                ended += int(np.sum(want[2] | want[3]))
        assert ended >= 2 * N, "episodes were meant to end often"
    finally:
        remote.close()
        local.close()


def test_step_async_wait_and_record_episode_statistics(provider: str) -> None:
    remote = gym.wrappers.vector.RecordEpisodeStatistics(_remote(provider, AutoresetMode.NEXT_STEP, True))
    local = gym.wrappers.vector.RecordEpisodeStatistics(local_sync(N, AutoresetMode.NEXT_STEP))
    try:
        remote.reset(seed=3)
        local.reset(seed=3)
        episodes = 0
        for t in range(40):
            actions = np.full(N, t % 2)
            remote.unwrapped.step_async(actions)
            with pytest.raises(gym.error.AlreadyPendingCallError):
                remote.unwrapped.step_async(actions)
            got = remote.unwrapped.step_wait()
            want = local.unwrapped.step(actions)
            assert_same(got, want, f"t={t}")
        # Through the wrapper: episode statistics equal Gymnasium's.
        for t in range(30):
            actions = np.full(N, 1)
            got, want = remote.step(actions), local.step(actions)
            assert_same(got[:4], want[:4], f"wrapped t={t}")
            assert got[4].keys() == want[4].keys()
            if "episode" in want[4]:  # "t" is wall time; returns and lengths must match
                for key in ("r", "l"):
                    assert_same(got[4]["episode"][key], want[4]["episode"][key], f"t={t} {key}")
                assert_same(got[4]["_episode"], want[4]["_episode"])
                episodes += int(want[4]["_episode"].sum())
        assert episodes > 0
        with pytest.raises(gym.error.NoAsyncCallError):
            remote.unwrapped.step_wait()
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_gym_env_with_declared_infos_equals_sync_vector_env(provider: str, mode: AutoresetMode) -> None:
    """Gym-v0 takes ``info_types`` for the env it serves: FrozenLake's step infos (a float
    ``prob``) then come through the columns, its reset infos (an int ``prob``) inline, and
    what the vector env returns is still exactly SyncVectorEnv's."""
    remote = gym.make_vec("OpenEnv/Gym-v0", num_envs=3, env_id="FrozenLake-v1", provider=provider,
                          envs_per_worker=2, autoreset_mode=mode, info_types={"prob": "float"})
    local = gym.vector.SyncVectorEnv([lambda: gym.make("FrozenLake-v1")] * 3, autoreset_mode=mode)
    try:
        assert remote.remote_spec["info_types"] == {"prob": "float"}
        assert_same(remote.reset(seed=3), local.reset(seed=3), "reset")
        rng, ended, in_columns = np.random.default_rng(1), 0, 0
        for t in range(40):
            _, want = step_both(remote, local, rng.integers(0, 4, 3), f"t={t}")
            ended += int(np.sum(want[2] | want[3]))
            in_columns += int(remote.unwrapped._step_in_columns.sum())
        assert ended >= 3 and in_columns > 0, (ended, in_columns)
    finally:
        remote.close()
        local.close()


def test_a_declared_info_type_without_a_column_stops_the_start_with_its_name() -> None:
    with pytest.raises(InvalidRequestError, match="info 'prob' has type 'double'"):
        gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="FrozenLake-v1", provider="process",
                     info_types={"prob": "double"})
