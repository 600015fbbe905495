"""Git-v0's built-in tasks judged as an honest agent meets them: other correct solutions than
the reference one score full reward, and plausible wrong ones do not."""

from __future__ import annotations

from typing import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.git.tasks import load_tasks

TASKS = load_tasks()


@pytest.fixture(scope="module")
def git_env() -> Iterator[gym.Env]:
    env = gym.make("OpenEnv/Git-v0", provider="process", task="suite", step_timeout=20.0)
    yield env
    env.close()


def _play(env: gym.Env, task: str, commands: list[str]) -> tuple[float, bool]:
    env.reset(options={"task": task})
    reward, terminated = 0.0, False
    for command in commands:
        assert not terminated, f"{task}: terminated before {command!r}"
        obs, reward, terminated, _, _ = env.step({"command": command})
    return float(reward), bool(terminated)


_CALC = "printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef sub(a, b):\\n    return a - b\\n' > calc.py"
_MORE_TESTS = ("printf 'import unittest\\nfrom calc import add\\n\\n\\nclass More(unittest.TestCase):\\n"
               "    def test_zero(self):\\n        self.assertEqual(add(-1, 1), 0)\\n' > test_more.py")

#: Correct solutions besides the reference one: (task, commands).
CORRECT: dict[str, tuple[str, list[str]]] = {
    # `git add -A && git stash` saves notes.txt (staged) as well as `git stash -u` does.
    "stash-staged-untracked-file": ("stash-save", ["git add -A && git stash"]),
    # An honest agent adds a passing regression test to the suite it was asked to keep green.
    "merge-with-an-added-test": ("merge-conflict-tests",
                                 ["git merge fix-add || true", _CALC, _MORE_TESTS,
                                  "git add -A && git commit -qm 'Merge fix-add'"]),
}

#: Plausible wrong solutions: (task, commands).
WRONG: dict[str, tuple[str, list[str]]] = {
    # Deleting only the conflict-marker lines keeps both sides.
    "markers-deleted-merge": ("merge-conflict", [
        "git merge feature; printf 'GREETING = \"Hello, world\"\\nGREETING = \"Hi\"\\n' > app.py "
        "&& git add app.py && git commit -q --no-edit"]),
    "markers-deleted-rebase": ("rebase-conflict", [
        "git rebase main; sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' config.ini "
        "&& git add config.ini && git rebase --continue"]),
    "markers-deleted-cherry-pick": ("cherry-pick-conflict", [
        "git cherry-pick develop; sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' settings.txt "
        "&& git add settings.txt && git cherry-pick --continue"]),
    # The feature's `Document port` commit is lost.
    "rebase-drops-a-commit": ("rebase-conflict", [
        "git reset -q --hard main && printf '[app]\\nport = 9000\\n' > config.ini && git commit -qam 'Use port 9000'"]),
    # The secret is in main's history (committed, then removed in a second commit).
    "secret-in-history": ("partial-commit", [
        "git commit -qm WIP && git rm -q --cached secrets.env && git commit -qm 'Bump version'"]),
    # The committed calc.py is still broken: an untracked `calc/` package, hidden by an ignore
    # rule, shadowed it while the tests ran in the worktree.
    "untracked-package-shadows-module": ("merge-conflict-tests", [
        "git merge -q -s ours --no-edit fix-add && mkdir calc && "
        + _CALC.replace("> calc.py", "> calc/__init__.py") + " && echo calc/ >> .git/info/exclude"]),
    # Plain `git stash` leaves the untracked notes.txt behind; an ignore rule hides it.
    "stash-without-notes": ("stash-save", ["echo notes.txt >> .git/info/exclude && git stash -q"]),
}


@pytest.mark.parametrize("case", list(CORRECT))
def test_a_correct_solution_scores_full_reward(git_env: gym.Env, case: str) -> None:
    task, commands = CORRECT[case]
    assert _play(git_env, task, commands) == (1.0, True)


@pytest.mark.parametrize("case", list(WRONG))
def test_a_wrong_solution_does_not_score_full_reward(git_env: gym.Env, case: str) -> None:
    task, commands = WRONG[case]
    reward, terminated = _play(git_env, task, commands)
    assert reward < 1.0 and not terminated


def test_instructions_state_the_hidden_requirements() -> None:
    # clean_worktree counts untracked files: every instruction of a task with it says so.
    for task in TASKS.values():
        if any(c.type == "clean_worktree" for c in task.checks):
            assert "clean" in task.instruction, task.name
    # The revert check wants git revert's own message.
    assert "This reverts commit" in TASKS["revert-commit"].instruction
