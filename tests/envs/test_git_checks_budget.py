"""The git calls of one step's checks share one budget (:data:`checks.CHECK_BUDGET`).

Each call had its own 10 s limit, but the agent writes ``.git/config``: an ``include.path``
naming a FIFO makes every git call block until its limit, and a step took 10 s per call
(50 s for merge-conflict's 7 checks; more with more calls, past the client's deadline for the
step). Now the check whose call spends the budget and every check after it fail at once, the
step's output says where the budget ran out, and the env goes on.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.git import checks

from tests.envs._check_context import FolderChecks

#: A step's command that makes every later git call in the repository block (git opens the
#: FIFO to read the included config, and no writer ever comes).
BLOCK_GIT = r"mkfifo .git/blk && printf '[include]\n\tpath = blk\n' >> .git/config"


def test_the_checks_after_the_budget_ran_out_fail_without_running(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "work" / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "app.py").write_text('GREETING = "Hello"\n')
    subprocess.run(["bash", "-c", BLOCK_GIT], cwd=repo, check=True)
    ran: list[str] = []
    real_run = FolderChecks.run

    def counted(self: FolderChecks, argv: list[str], *args: object, **kwargs: object):
        ran.append(argv[-1])
        return real_run(self, argv, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(FolderChecks, "run", counted)
    monkeypatch.setattr(checks, "CHECK_BUDGET", 0.5)  # the FIFO blocks git: it is spent at once
    round_ = [("file_exists", {"path": "app.py"}), ("current_branch", {"branch": "main"}),
              ("branch_exists", {"branch": "main"}), ("file_exists", {"path": "app.py"})]
    notes: list[str] = []

    assert checks.run_checks(FolderChecks(tmp_path), "repo", round_, notes) == [True, False, False, False]
    assert notes == ["[the step's check budget of 0.5 s ran out at check 2 of 4 (current_branch): "
                     "it and the 2 after it count as failed]"]
    assert ran == ["HEAD"]  # current_branch's one call; branch_exists ran none
    # A round without a blocked git is untouched by the last one's budget.
    os.remove(repo / ".git" / "blk")
    notes.clear()
    assert checks.run_checks(FolderChecks(tmp_path), "repo", round_, notes) == [True, True, False, True]
    assert notes == []


def test_a_step_whose_checks_ran_out_says_so_and_the_env_goes_on(provider: str) -> None:
    env = gym.make("OpenEnv/Git-v0", provider=provider, task="merge-conflict")
    try:
        obs, _ = env.reset(seed=0)
        start = obs["checks_passed"]
        assert 0 < start < obs["checks_total"] == 7
        obs, reward, terminated, _, _ = env.step({"command": BLOCK_GIT})
        assert obs["exit_code"] == 0
        assert obs["output"] == ("[the step's check budget of 10 s ran out at check 1 of 7 "
                                 "(is_ancestor): it and the 6 after it count as failed]\n")
        assert (obs["checks_passed"], reward, terminated) == (0, 0.0, False)
        obs, _ = env.reset(seed=0)
        assert obs["checks_passed"] == start
    finally:
        env.close()
