"""The default ``step_timeout`` of a vector env whose workers host several envs: a worker steps
its envs one after another, so its exchange may take each env's longest step in turn. The
deadline was one env's longest step plus a margin, so a worker whose three Coding envs each ran
code within their own ``max_timeout`` was given up as hung and replaced, its envs truncated and
their episodes lost, though nothing was wrong."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.spec import call_timeout


def test_default_step_timeout_covers_every_env_of_a_worker() -> None:
    with gym.make_vec("OpenEnv/Coding-v0", num_envs=2, provider="process", envs_per_worker=3,
                      env_kwargs={"max_timeout": 25.0}) as envs:
        # Two envs share the one worker: it may take 2 x 25 s before the margin.
        assert envs.step_timeout == call_timeout({"max_step_seconds": 50.0}, None)
    with gym.make_vec("OpenEnv/Coding-v0", num_envs=2, provider="process", envs_per_worker=1,
                      env_kwargs={"max_timeout": 25.0}, step_timeout=7) as envs:
        assert envs.step_timeout == 7.0  # a given deadline is kept as given


@pytest.mark.slow
def test_envs_of_one_worker_each_taking_a_long_step_are_not_restarted() -> None:
    with gym.make_vec("OpenEnv/Coding-v0", num_envs=3, provider="process", envs_per_worker=3,
                      env_kwargs={"max_timeout": 25.0}) as envs:
        envs.reset(seed=0)
        # 3 x 21 s: past one env's 25 s + 30 s margin (60 s), within each env's own limit.
        obs, rewards, _, truncated, infos = envs.step(
            {"code": ["import time; time.sleep(21); print('done')"] * 3, "timeout": [25.0] * 3})
        assert "worker_restarted" not in infos, infos.get("worker_error")
        assert list(obs["stdout"]) == ["done\n"] * 3
        np.testing.assert_array_equal(rewards, [1.0] * 3)
        assert not truncated.any()
