"""Removing what a sandboxed child left (:mod:`openenv_gym.envs._files`), however deep it nested it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from openenv_gym.envs._files import empty_folder, remove_tree

#: Deeper than ``shutil.rmtree``'s recursion under Python's default limit (a frame per level, 1000)
#: and, with :data:`NAME`, than a path reaches (PATH_MAX, 4096 bytes): what a child makes in a
#: second with ``mkdir d; cd d``. Fixed, not the limit + N: the suite raises the limit.
DEPTH = 1500
NAME = "d" * 8


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Path]:
    """An empty folder, removed with ``rm -rf`` whatever the test leaves: a tree this deep
    left in pytest's folder would fail the removal of old ones in every later run."""
    top = tmp_path / "box"
    top.mkdir()
    try:
        yield top
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", "--", str(tmp_path)], check=False, timeout=120)
        subprocess.run(["rm", "-rf", "--", str(tmp_path)], check=False, timeout=120)


def _nest(top: Path, locked: bool = False) -> None:
    """``top/NAME/NAME/...`` :data:`DEPTH` levels deep, with a file and a link now and then,
    made as a child makes it (relative to the folder it is in: no path that long exists)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(DEPTH):
            if level % 100 == 0:
                os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
                os.symlink("/", "up", dir_fd=fd)
            os.mkdir(NAME, 0o700, dir_fd=fd)
            inner = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            if locked and level:
                os.fchmod(fd, 0)  # done with it: no one may list or enter it any more
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def test_remove_tree_removes_folders_nested_deeper_than_rmtree_and_a_path_reach(box: Path) -> None:
    _nest(box)
    remove_tree(str(box))  # raised RecursionError
    assert not box.exists()


def test_empty_folder_empties_folders_nested_deeper_than_rmtree_and_a_path_reach(box: Path) -> None:
    """Coding-v0 empties its sandbox after every step and at every reset: one step that nested
    folders this deep made every later step and reset of the env fail (RecursionError)."""
    keep = box / "io"
    keep.mkdir()
    (keep / "code.py").write_text("kept")
    _nest(box, locked=True)  # each level locked too: the worker must give rights back
    empty_folder(str(box), keep=(str(keep),))
    assert sorted(os.listdir(box)) == ["io"] and (keep / "code.py").read_text() == "kept"


def test_the_removal_of_a_deep_tree_follows_no_link(box: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("host")
    _nest(box)
    os.symlink(outside, box / "link")
    empty_folder(str(box))
    assert os.listdir(box) == [] and (outside / "keep.txt").read_text() == "host"
