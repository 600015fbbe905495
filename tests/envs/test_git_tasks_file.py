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


@pytest.mark.parametrize(("check", "named"), [
    # A misspelled or missing field: the check failed at every step (run_check never
    # raises), so the task could not be solved, and nothing said why.
    ('{ type = "branch_exists", brnch = "main" }', r"check 'branch_exists': .*'brnch'.*its fields: branch"),
    ('{ type = "branch_exists" }', r"check 'branch_exists': missing .*'branch'"),
    ('{ type = "commit_count", rev = "HEAD" }', r"check 'commit_count': missing .*'count'"),
    # A weight of NaN or an infinity made every reward NaN; a word was a bare float() error.
    ('{ type = "branch_exists", branch = "main", weight = nan }', r"task 't': check weights .* got nan"),
    ('{ type = "branch_exists", branch = "main", weight = inf }', r"task 't': check weights .* got inf"),
    ('{ type = "branch_exists", branch = "main", weight = "heavy" }', r"task 't': check weights .* 'heavy'"),
])
def test_a_check_that_cannot_run_as_written_is_refused_by_name(tmp_path: Path, check: str,
                                                              named: str) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text(f'[[task]]\nname = "t"\ninstruction = "i"\nchecks = [{check}]\n')
    with pytest.raises(ValueError, match=named):
        load_tasks(path)


def test_checks_that_are_not_a_list_of_tables_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text('[[task]]\nname = "t"\ninstruction = "i"\nchecks = "branch_exists"\n')
    with pytest.raises(ValueError, match=r"task 't': checks must be a list of tables"):
        load_tasks(path)


def test_optional_fields_and_repo_are_still_taken(tmp_path: Path) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text('[[task]]\nname = "t"\ninstruction = "i"\nchecks = ['
                    '{ type = "tag_exists", tag = "v1", repo = "other", weight = 2 },'
                    '{ type = "clean_worktree" }]\n')
    [first, second] = load_tasks(path)["t"].checks
    assert (first.weight, first.params) == (2.0, {"tag": "v1", "repo": "other"})
    assert second.params == {}


@pytest.mark.parametrize("repo", ["/etc", "../elsewhere", "repo/../../x", 3])
def test_a_repo_outside_the_workspace_is_refused_by_name(tmp_path: Path, repo: object) -> None:
    # It was taken, and every step without a workdir then raised "workdir '' is outside the
    # workspace" (the task's repo is the default workdir); the checks looked there too.
    value = f'"{repo}"' if isinstance(repo, str) else repo
    path = tmp_path / "tasks.toml"
    path.write_text(f'[[task]]\nname = "t"\ninstruction = "i"\nrepo = {value}\n'
                    'checks = [{ type = "branch_exists", branch = "main" }]\n')
    with pytest.raises(ValueError, match=r"task 't': repo must be a folder relative to the workspace"):
        load_tasks(path)
    path.write_text('[[task]]\nname = "t"\ninstruction = "i"\n'
                    f'checks = [{{ type = "branch_exists", branch = "main", repo = {value} }}]\n')
    with pytest.raises(ValueError, match=r"check 'branch_exists': repo must be a folder relative"):
        load_tasks(path)


def test_a_repo_inside_the_workspace_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text('[[task]]\nname = "t"\ninstruction = "i"\nrepo = "clones/app"\n'
                    'checks = [{ type = "branch_exists", branch = "main", repo = "a/../b" }]\n')
    task = load_tasks(path)["t"]
    assert task.repo == "clones/app" and task.checks[0].params["repo"] == "a/../b"


def test_a_solution_written_as_one_string_is_one_command(tmp_path: Path) -> None:
    # setup may be one string; a solution written so became one command per character
    # (("g", "i", "t", ...)), which replayed as actions failed at its first.
    path = tmp_path / "tasks.toml"
    path.write_text('[[task]]\nname = "t"\ninstruction = "i"\nsetup = "new_repo"\n'
                    'solution = "git checkout -b x"\n'
                    'checks = [{ type = "branch_exists", branch = "x" }]\n')
    task = load_tasks(path)["t"]
    assert task.setup == ("new_repo",) and task.solution == ("git checkout -b x",)


@pytest.mark.parametrize(("text", "named"), [
    # An empty file was taken: task="suite" then failed every reset with numpy's bare
    # "high <= 0"; an entry that is no table was an AttributeError ('int' object ...).
    ("", "the file has no \\[\\[task\\]\\] table"),
    ("task = []\n", "the file has no \\[\\[task\\]\\] table"),
    ("task = [1]\n", "each task must be a \\[\\[task\\]\\] table"),
    ('task = "merge"\n', "each task must be a \\[\\[task\\]\\] table"),
])
def test_a_file_without_tasks_is_refused(tmp_path: Path, text: str, named: str) -> None:
    path = tmp_path / "tasks.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=named):
        load_tasks(path)
    with pytest.raises(InvalidRequestError, match=named):
        gym.make("OpenEnv/Git-v0", provider="process", task="suite", tasks_file=str(path)).close()


def test_a_task_named_like_the_suite_is_refused(tmp_path: Path) -> None:
    # task="suite" draws one per episode, so a task of that name could never be chosen.
    path = tmp_path / "tasks.toml"
    path.write_text('[[task]]\nname = "suite"\ninstruction = "i"\n'
                    'checks = [{ type = "branch_exists", branch = "main" }]\n')
    with pytest.raises(ValueError, match="a task cannot be named 'suite'"):
        load_tasks(path)
