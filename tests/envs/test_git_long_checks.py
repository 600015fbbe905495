"""A Git-v0 step is its command and then its checks: a ``command`` or ``unittest`` check runs
the repository's code (the agent's) for up to 60 s. The client's deadline covers both, so a
step whose tested code hangs ends with the check failed, not with the worker given up
(``WorkerTimeoutError``) and the session lost (tests/envs/)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.git.checks import CHECK_BUDGET
from openenv_gym.envs.git.workspace import SHELL_CHECK_TIMEOUT

TASKS = """
[[task]]
name = "two-slow-checks"
instruction = "Make the tests pass."
setup = ["new_repo", "commit a.txt a 'Initial commit'"]
checks = [{ type = "command", run = "true" }, { type = "unittest", tests = 1 }]
"""


def test_the_clients_deadline_covers_the_command_and_the_checks(tmp_path: Path) -> None:
    (tmp_path / "tasks.toml").write_text(TASKS)
    env = gym.make("OpenEnv/Git-v0", provider="process", tasks_file=str(tmp_path / "tasks.toml"),
                   task="two-slow-checks", max_timeout=5.0, step_timeout=5.0)
    try:
        # Before: 5 s (the command's limit), so the client waited 60 s, and a step whose
        # command check hung for its 60 s after a 4 s command raised WorkerTimeoutError.
        longest = 5.0 + CHECK_BUDGET + 2 * SHELL_CHECK_TIMEOUT
        assert env.unwrapped.remote_spec["max_step_seconds"] == longest
        assert env.unwrapped._client.timeout > longest
    finally:
        env.close()
