"""A worker that died before a call()/get_attr()/render() (on_worker_error="restart") fails that
call once and is replaced; the error must not say it "failed again on a fresh worker"."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import ResetNeededError, WorkerCrashedError
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


@pytest.mark.parametrize("mode", ["next_step", "disabled"])
def test_render_between_a_replacement_and_its_reset_names_the_replacement(mode: str) -> None:
    # Gymnasium's own text ("before calling env.reset()") blamed the caller, who did reset:
    # the replaced worker's env waits for the reset that starts its fresh episode.
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="process",
                        envs_per_worker=1, render_mode="rgb_array", autoreset_mode=mode)
    try:
        envs.reset(seed=0)
        kill_worker(envs.unwrapped.workers[1])
        _, _, _, truncated, _ = envs.step(np.zeros(2, dtype=np.int64))
        assert truncated.tolist() == [False, True]
        with pytest.raises(ResetNeededError, match=r"env 1's worker was replaced") as raised:
            envs.render()
        assert ("reset_mask" in str(raised.value)) == (mode == "disabled")
        if mode == "disabled":
            envs.reset(options={"reset_mask": np.array([False, True])})
        else:
            envs.step(np.zeros(2, dtype=np.int64))
        assert [frame.shape for frame in envs.render()] == [(400, 600, 3)] * 2
    finally:
        envs.close()


def test_render_before_the_first_reset_keeps_gymnasiums_text() -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="process",
                        envs_per_worker=1, render_mode="rgb_array")
    try:
        with pytest.raises(ResetNeededError) as raised:
            envs.render()
        assert "before calling `env.reset()`" in str(raised.value)
        assert "replaced" not in str(raised.value)
    finally:
        envs.close()
