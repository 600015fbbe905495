"""A check's rev may name a branch's upstream (``main@{u}``): the branch-before-tag rewrite
must not turn it into ``refs/heads/main@{u}``, which git cannot resolve."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from openenv_gym.envs.git import checks

from tests.envs._check_context import FolderChecks


@pytest.fixture
def ctx(tmp_path: Path) -> FolderChecks:
    ctx = FolderChecks(tmp_path)
    os.makedirs(ctx.work)
    os.makedirs(ctx.remotes)
    repo = os.path.join(ctx.work, "repo")
    script = (
        f"git init -q --bare {ctx.remotes}/origin.git && git init -q -b main {repo} && cd {repo}"
        " && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m one"
        f" && git remote add origin {ctx.remotes}/origin.git && git push -q -u origin main"
        " && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m two"
        " && git tag main HEAD~1")  # a tag named like the branch: the branch must still win
    subprocess.run(script, shell=True, check=True, capture_output=True)
    return ctx


@pytest.mark.parametrize("rev", ["main@{u}", "main@{upstream}", "main@{UPSTREAM}", "main@{push}"])
def test_an_upstream_rev_resolves_in_a_check(ctx: FolderChecks, rev: str) -> None:
    assert checks.run_check(ctx, "repo", "same_commit", {"a": rev, "b": "origin/main"})
    assert checks.run_check(ctx, "repo", "is_ancestor", {"ancestor": rev, "descendant": "HEAD"})


def test_a_branch_still_beats_a_tag_of_its_name(ctx: FolderChecks) -> None:
    assert checks.run_check(ctx, "repo", "same_commit", {"a": "main", "b": "HEAD"})
    assert checks.run_check(ctx, "repo", "same_commit", {"a": "main~1", "b": "origin/main"})
