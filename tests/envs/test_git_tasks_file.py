"""Git-v0's ``tasks_file=``: a task that cannot be played is refused when the file is read."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.git.models import MAX_INSTRUCTION
from openenv_gym.envs.git.tasks import load_tasks
from openenv_gym.errors import InvalidRequestError

_TASK = """
[[task]]
name = "t"
{instruction}
setup = ["new_repo"]
checks = [{{ type = "branch_exists", branch = "main" }}]
"""


def _write(tmp_path: Path, instruction: str) -> Path:
    path = tmp_path / "tasks.toml"
    path.write_text(_TASK.format(instruction=instruction))
    return path


def test_a_task_without_an_instruction_is_refused_by_name(tmp_path: Path) -> None:
    # It was a bare KeyError: 'instruction', which named neither the file nor the task.
    with pytest.raises(ValueError, match=r"tasks.toml: task 't' has no instruction"):
        load_tasks(_write(tmp_path, ""))
    with pytest.raises(ValueError, match=r"task 't' has no instruction"):
        load_tasks(_write(tmp_path, 'instruction = "  "'))


def test_an_instruction_longer_than_the_observation_holds_is_refused_at_make(tmp_path: Path) -> None:
    # The env was made, and then every reset of the task failed: its observation could not
    # hold the instruction (a pydantic ValidationError from the worker).
    long = _write(tmp_path, f'instruction = "{"a" * (MAX_INSTRUCTION + 1)}"')
    with pytest.raises(ValueError, match=f"instruction has {MAX_INSTRUCTION + 1} characters"):
        load_tasks(long)
    with pytest.raises(InvalidRequestError, match="instruction has"):
        env = gym.make("OpenEnv/Git-v0", provider="process", task="t", tasks_file=str(long))
        env.close()
    longest = _write(tmp_path, f'instruction = "{"a" * MAX_INSTRUCTION}"')
    env = gym.make("OpenEnv/Git-v0", provider="process", task="t", tasks_file=str(longest))
    try:
        obs, _ = env.reset()
        assert len(obs["instruction"]) == MAX_INSTRUCTION
    finally:
        env.close()
