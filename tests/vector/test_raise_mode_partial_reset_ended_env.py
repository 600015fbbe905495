"""on_worker_error="raise", NEXT_STEP: an env of a healthy worker that ended in the step that
raised (its results were never returned) is reset at its next step, as after any step, even
when the reset() that follows leaves it out (reset_mask)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401
from openenv_gym.errors import WorkerCrashedError
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.vector_helpers import kill_worker

N = 4


def _steps_until_env2_terminates() -> int:
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(N)])
    ref.reset(seed=0)
    for t in range(1, 500):
        if ref.step(np.zeros(N, dtype=np.int64))[2][2]:
            return t
    raise AssertionError("CartPole pushed left never fell")


def test_env_ended_in_the_raised_step_is_reset_after_a_partial_reset() -> None:
    t = _steps_until_env2_terminates()
    envs = RemoteVectorEnv(N, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=2,
                           on_worker_error="raise",
                           autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)
    try:
        envs.reset(seed=0)
        for _ in range(t - 1):
            envs.step(np.zeros(N, dtype=np.int64))
        kill_worker(envs.workers[0])
        try:
            envs.step(np.zeros(N, dtype=np.int64))  # env 2 (worker 1) ends here, unseen
        except WorkerCrashedError:
            pass
        envs.reset(options={"reset_mask": np.array([True, True, False, False])})
        # Was: ResetNeededError from env 2's server ("the episode ... ended at step 9").
        obs, rewards, terminated, truncated, _ = envs.step(np.zeros(N, dtype=np.int64))
        assert rewards[2] == 0.0 and not terminated[2]  # the autoreset step (NEXT_STEP)
        assert np.all(np.abs(obs[2]) < 0.05)  # a fresh CartPole state
    finally:
        envs.close()
