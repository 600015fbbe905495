"""A repository with folders nested deeper than Python recurses: its checks fail, never raise.

``no_conflict_markers`` walks the worktree and ``unittest`` with ``rev`` walks the commit's
exported tree with ``os.walk``, which recurses a frame per level: an agent's ``mkdir d; cd d``
in a loop made every step of the episode fail with RecursionError, not the check."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from openenv_gym.envs.git import checks

from tests.envs._check_context import FolderChecks

#: Deeper than Python's default recursion limit (1000), which :func:`_default_recursion` puts
#: back for the check (a library in the same test session may have raised it), and short
#: enough for git's paths (2 characters a level, under PATH_MAX).
DEPTH = 1500


@contextlib.contextmanager
def _default_recursion() -> Iterator[None]:
    """Python's default recursion limit while the check runs, whatever raised it before."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """The checks' folder, removed with ``rm -rf``: a tree this deep left in pytest's folder
    would fail its removal of old ones (``shutil.rmtree``) in every later run."""
    try:
        yield tmp_path
    finally:
        subprocess.run(["rm", "-rf", "--", str(tmp_path)], check=False, timeout=120)


def _repo_with_deep_tree(root: Path, commit: bool) -> None:
    repo = root / "work" / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "test_ok.py").write_text("import unittest\nclass T(unittest.TestCase):\n    def test(self): pass\n")
    deep = str(repo)
    for _ in range(DEPTH):  # os.makedirs recurses too
        deep = os.path.join(deep, "d")
        os.mkdir(deep)
    Path(deep, "f.txt").write_text("<<<<<<< ours\n")
    if commit:
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", "deep"], check=True)


def test_no_conflict_markers_fails_on_a_tree_deeper_than_python_recurses(root: Path) -> None:
    _repo_with_deep_tree(root, commit=False)
    with _default_recursion():
        assert checks.run_check(FolderChecks(root), "repo", "no_conflict_markers", {}) is False


def test_unittest_of_a_commit_deeper_than_python_recurses_fails_and_leaves_no_export(root: Path) -> None:
    _repo_with_deep_tree(root, commit=True)
    ctx = FolderChecks(root)
    with _default_recursion():
        assert checks.run_check(ctx, "repo", "unittest", {"tests": 1, "rev": "HEAD"}) is False
    assert os.listdir(ctx.tmp) == []  # the exported tree is removed, however deep
