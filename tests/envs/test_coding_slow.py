"""All 164 HumanEval canonical solutions score 1.0 (in-process on the env class, plus a
sample through a worker), and an empty completion scores 0 on every problem."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.envs.coding.env import CodingEnv
from openenv_gym.envs.coding.humaneval import load_problems


@pytest.mark.slow
def test_every_canonical_solution_scores_one() -> None:
    env = CodingEnv(task="humaneval")
    failed = []
    try:
        for index, problem in enumerate(load_problems()):
            env.reset(options={"problem": index})
            obs, reward, terminated, _, _ = env.step(env.parse_action({"code": problem.canonical_solution}))
            if reward != 1.0 or not terminated:
                failed.append((problem.task_id, reward, obs.stderr[-300:]))
            env.reset(options={"problem": index})
            if env.step(env.parse_action({"code": ""}))[1] != 0.0:
                failed.append((problem.task_id, "empty completion scored"))
    finally:
        env.close()
    assert not failed


@pytest.mark.slow
def test_canonical_solutions_through_a_worker(provider: str) -> None:
    env = gym.make("OpenEnv/Coding-v0", provider=provider, task="humaneval")
    try:
        for index in range(0, 164, 8):
            env.reset(options={"problem": index})
            problem = load_problems()[index]
            obs, reward, *_ = env.step({"code": problem.canonical_solution})
            assert reward == 1.0, (problem.task_id, obs["stderr"])
    finally:
        env.close()
