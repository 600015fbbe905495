"""A worker that died before a call()/get_attr()/render() (on_worker_error="restart") fails that
call once and is replaced; the error must not say it "failed again on a fresh worker"."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import WorkerCrashedError
from tests.vector.vector_helpers import kill_worker


def test_call_on_a_dead_worker_says_it_is_replaced(provider: str) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=1)
    try:
        envs.reset(seed=0)
        worker = envs.unwrapped.workers[0]
        kill_worker(worker)
        with pytest.raises(WorkerCrashedError) as info:
            envs.get_attr("gravity")
        assert "failed again" not in str(info.value)
        assert "replaced" in str(info.value)
        assert worker.restarts == 1 and worker.alive()
        _, _, _, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
        assert truncated.tolist() == [True, False] and infos["worker_restarted"][0]
    finally:
        envs.close()
