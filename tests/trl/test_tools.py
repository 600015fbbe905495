"""Tool envs for ``GRPOTrainer(environment_factory=...)``, on real workers of Coding and Git."""

from __future__ import annotations

import inspect
import time

import pytest

from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.errors import OpenEnvError, WorkerCrashedError, WorkerError, WorkerTimeoutError
from openenv_gym.trl import CodingTools, EnvPool, GitTools, tool_env_factory

from tests.trl.grpo_helpers import PROBLEM, SOLUTION

pytestmark = pytest.mark.timeout(240)


def trl_tools(env: object) -> list[str]:
    """The methods TRL offers the model as tools (its own rule, grpo_trainer.py)."""
    return [name for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
            if name not in ("reset", "get_reward") and not name.startswith("_")]


@pytest.mark.parametrize("cls, tool, argument", [(CodingTools, "run_python", "code"),
                                                 (GitTools, "shell", "command")])
def test_each_tool_env_offers_one_tool_whose_schema_transformers_can_read(cls, tool, argument) -> None:
    from transformers.utils import get_json_schema

    assert [n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
            if not n.startswith("_") and n not in ("reset", "get_reward")] == [tool]
    schema = get_json_schema(getattr(cls, tool))["function"]
    assert schema["name"] == tool and schema["parameters"]["required"] == [argument]
    assert schema["parameters"]["properties"][argument]["type"] == "string"
    assert schema["parameters"]["properties"][argument]["description"]


def test_coding_tool_is_graded_by_the_tasks_tests_and_the_instance_is_reused() -> None:
    with EnvPool("coding", num_workers=1, provider="process", task="humaneval", max_attempts=2,
                 reward_mode="final") as pool:
        env = tool_env_factory(pool, option_columns=("problem",))()
        assert trl_tools(env) == ["run_python"]
        assert env.reset(prompt=get_problem(PROBLEM).prompt, problem=PROBLEM, task_id="x") is None
        text = env.run_python("    return 0.5\n")
        assert "[tests_passed: 1/3]" in text and "episode is over" not in text
        assert env.get_reward() == pytest.approx(1 / 3)
        # TRL keeps its env instances and resets them for the next batch.
        env.reset(prompt="again", problem=PROBLEM)
        assert env.outcome.actions == []
        assert "[tests_passed: 3/3]" in env.run_python(SOLUTION)
        assert env.get_reward() == 1.0 and env.outcome.terminated
        assert env.run_python("raise SystemExit(1)") == "The episode is over: nothing was run."
        assert env.get_reward() == 1.0 and len(env.outcome.actions) == 1
        with pytest.raises(KeyError, match=r"\['problem'\].*option_columns"):
            env.reset(prompt="no problem column")


def test_git_tool_poses_the_task_at_reset_and_scores_its_checks() -> None:
    with EnvPool("git", num_workers=1, provider="process", task="create-branch", reward_mode="final") as pool:
        env = tool_env_factory(pool)()
        assert trl_tools(env) == ["shell"]
        instruction = env.reset(prompt="Do the task.")
        assert "feature/login" in instruction
        assert env.get_reward() == 0.0
        env.reset(prompt="Do the task.")
        out = env.shell("git switch -c feature/login")
        assert "Switched to a new branch" in out and "episode is over" in out
        assert env.get_reward() == 1.0


def test_a_failed_reset_that_shows_its_observation_shows_the_failure_instead() -> None:
    with EnvPool("git", num_workers=1, provider="process", task="suite", failure_reward=-1.0) as pool:
        env = tool_env_factory(pool, option_columns=("task",))()
        shown = env.reset(prompt="Do the task.", task="no-such-task")  # a dataset's typo
        assert shown.startswith("\n\n") and "env_error" in shown and "no-such-task" in shown
        with pytest.raises(OpenEnvError, match="env_error"):
            env.shell("git status")
        assert env.get_reward() == -1.0
        assert "feature/login" in env.reset(prompt="Do the task.", task="create-branch")  # the worker is fine
        assert env.outcome.failure is None


def test_a_hung_call_raises_scores_the_failure_reward_and_model_time_is_not_env_time() -> None:
    with EnvPool("coding", num_workers=1, provider="process", episode_timeout=1.5,
                 failure_reward=-1.0) as pool:
        env = tool_env_factory(pool)()
        env.reset(prompt="p")
        assert "[exit_code: 0]" in env.run_python("print(1)")
        time.sleep(1.6)  # a model generating its next call for longer than episode_timeout
        assert "[exit_code: 0]" in env.run_python("print(2)")
        with pytest.raises(WorkerTimeoutError, match="episode_timeout=1.5"):
            env.run_python("while True:\n    pass\n")
        assert env.get_reward() == -1.0
        with pytest.raises(WorkerTimeoutError):  # the model calling again is told the same
            env.run_python("print(3)")
        assert pool.workers[0].restarts == 1
        env.reset(prompt="p")  # the next rollout gets the replaced worker
        assert "3" in env.run_python("print(3)") and env.get_reward() == 1.0


def test_a_crash_and_a_refusal_raise_their_own_kinds_and_score_theirs() -> None:
    kill_parent = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    # confine=False: a confined step cannot signal its worker; this test needs one that dies.
    with EnvPool("coding", num_workers=1, provider="process", task="humaneval", confine=False,
                 failure_reward={"crash": None, "env_error": -0.5}) as pool:
        env = tool_env_factory(pool, option_columns=("problem",))()
        env.reset(prompt="p", problem=PROBLEM)
        with pytest.raises(WorkerCrashedError, match="crash"):
            env.run_python(kill_parent)
        assert env.get_reward() is None and pool.workers[0].restarts == 1
        # The env refuses the task: reset does not raise (TRL calls it outside its tool-error
        # handling: the training step would end); the tool call does, and the episode scores it.
        assert env.reset(prompt="p", problem=999) is None
        with pytest.raises(OpenEnvError, match="problem") as refused:
            env.run_python("print(1)")
        assert not isinstance(refused.value, WorkerError) and "env_error" in str(refused.value)
        assert env.get_reward() == -0.5 and pool.workers[0].restarts == 1
        assert pool.stats["env_error"] == 1
        env.reset(prompt="p", problem=PROBLEM)  # the worker was fine all along
        assert env.outcome.failure is None


def test_envs_without_a_tool_env_are_refused_with_the_alternatives() -> None:
    with EnvPool("echo", num_workers=1, provider="process") as pool:
        with pytest.raises(ValueError, match=r"'echo' has no tool env.*\['coding', 'git'\]"):
            tool_env_factory(pool)


def test_grpo_runs_the_models_tool_calls_in_the_env_and_trains_on_its_reward(tool_caller, tmp_path) -> None:
    import gymnasium as gym
    from datasets import Dataset
    from trl import GRPOTrainer

    from tests.trl.conftest import TOOL_CALL_CODE
    from tests.trl.grpo_helpers import grpo_config

    model, tok = tool_caller
    made: list[CodingTools] = []
    with EnvPool("coding", num_workers=2, provider="process", task="humaneval", reward_mode="final") as pool:
        factory = tool_env_factory(pool, option_columns=("problem",))

        def make() -> CodingTools:
            made.append(factory())
            return made[-1]

        rows = [{"prompt": [{"role": "user", "content": get_problem(PROBLEM).prompt}], "problem": PROBLEM}]
        trainer = GRPOTrainer(model=model, args=grpo_config(tmp_path, max_completion_length=64, temperature=0.5),
                              processing_class=tok, environment_factory=make, train_dataset=Dataset.from_list(rows))
        trainer.train()
    logs = [h for h in trainer.state.log_history if "tools/call_frequency" in h]
    assert trainer.state.global_step == 2 and len(logs) == 2
    assert all(h["tools/call_frequency"] > 0 and h["tools/failure_frequency"] == 0 for h in logs)
    # One env per rollout of the group, each with the call the model wrote, graded by the tests.
    assert len(made) == 4
    calls = [e.outcome.actions for e in made]
    assert all(c == [{"code": TOOL_CALL_CODE}] for c in calls), calls
    env = gym.make("OpenEnv/Coding-v0", provider="process", task="humaneval")
    try:
        env.reset(options={"problem": PROBLEM})
        _, expected, *_ = env.step({"code": TOOL_CALL_CODE})
    finally:
        env.close()
    assert expected == pytest.approx(1 / 3)
    assert [h["rewards/CodingTools/mean"] for h in logs] == pytest.approx([expected, expected])


def test_a_call_with_arguments_that_do_not_fit_raises_and_the_episode_goes_on() -> None:
    from openenv_gym.errors import InvalidActionError

    with EnvPool("git", num_workers=1, provider="process", task="create-branch") as pool:
        env = tool_env_factory(pool)()
        env.reset(prompt="Do the task.")
        # A model's JSON may give a number or a list where the tool takes a string.
        for bad in (123, ["git", "status"], "x" * 1_000_000):
            with pytest.raises(InvalidActionError, match="command.*goes on"):
                env.shell(bad)
        assert env.outcome.failure is None and env.outcome.actions == [] and pool.stats["env_error"] == 0
        assert "episode is over" in env.shell("git switch -c feature/login")
        assert env.get_reward() == 1.0
