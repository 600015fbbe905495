"""``rev_file_contains``/``rev_file_lacks`` read the committed file and run no program of the
repository's config: the agent makes the tree, and a gitlink at the checked path naming a
commit of the repository made ``git show`` print that commit's patch, through the textconv
program ``.gitattributes`` and ``.git/config`` name, run by the worker outside the agent's
limits (and the patch's text was matched as the file's)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from openenv_gym.envs.git import checks

from tests.envs._check_context import FolderChecks


def test_a_gitlink_at_the_path_is_no_file_and_runs_no_textconv(tmp_path: Path) -> None:
    repo = tmp_path / "work" / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitattributes").write_text("*.txt diff=x\n")
    (repo / "notes.txt").write_text("old\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    (repo / "notes.txt").write_text('GREETING = "Hello, world"\n')
    subprocess.run([*git, "commit", "-q", "-am", "two"], check=True)
    two = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                         text=True).stdout.strip()
    # app.py in the next commit is a gitlink to "two", whose patch touches a textconv'd file.
    subprocess.run([*git, "update-index", "--add", "--cacheinfo", f"160000,{two},app.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "three"], check=True)
    marker = tmp_path / "ran"
    program = tmp_path / "textconv.sh"
    program.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    subprocess.run([*git, "config", "diff.x.textconv", str(program)], check=True)
    ctx = FolderChecks(tmp_path)

    fields = {"rev": "HEAD", "path": "app.py", "text": 'GREETING = "Hello, world"'}
    assert checks.run_check(ctx, "repo", "rev_file_contains", fields) is False
    assert checks.run_check(ctx, "repo", "rev_file_lacks", {**fields, "text": "nothing"}) is False
    assert not marker.exists(), "a check's git ran the repository's textconv program"
    # A committed file is still read as it is.
    assert checks.run_check(ctx, "repo", "rev_file_contains", {**fields, "path": "notes.txt"})
    assert checks.run_check(ctx, "repo", "rev_file_lacks", {**fields, "path": "notes.txt", "text": "old"})
