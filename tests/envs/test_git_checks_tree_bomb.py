"""``no_conflict_markers`` scans the whole working tree in the worker, on every step and with
no timeout: a tree the agent filled with files (300,000 empty ones took 50 s a step, growing
with the tree) fails the check at once instead, past :data:`checks.SCAN_ENTRIES` entries or
:data:`checks.SCAN_BYTES` bytes read, and never lists the rest of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openenv_gym.envs.git import checks

from tests.envs._check_context import FolderChecks

#: :data:`checks.SCAN_ENTRIES` (asserted below; written out, so the test reads as it ran on
#: the code before the bound).
BOUND = 10_000


def _repo(root: Path) -> Path:
    repo = root / "work" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "app.py").write_text('GREETING = "Hello"\n')
    return repo


def _passes(root: Path) -> bool:
    return checks.run_check(FolderChecks(root), "repo", "no_conflict_markers", {})


def test_a_tree_past_the_entry_bound_fails_without_being_listed_whole(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    junk = repo / "junk"
    junk.mkdir()
    for i in range(BOUND - 3):  # with app.py, junk/ and .git/: exactly the bound
        (junk / str(i)).touch()
    assert _passes(tmp_path)
    (junk / "one-more").touch()
    seen: list[int] = []
    real = os.scandir

    class Counted:
        def __init__(self, path: str) -> None:
            self.it = real(path)

        def __enter__(self) -> "Counted":
            return self

        def __exit__(self, *exc: object) -> None:
            self.it.close()

        def close(self) -> None:
            self.it.close()

        def __iter__(self) -> "Counted":
            return self

        def __next__(self) -> os.DirEntry:
            entry = next(self.it)
            seen.append(1)
            return entry

    for i in range(2000):
        (junk / f"more-{i}").touch()
    monkeypatch.setattr(os, "scandir", Counted)
    assert not _passes(tmp_path)
    # os.walk listed every entry of every folder before a file was read; now the scan stops.
    assert len(seen) <= BOUND + 1
    assert checks.SCAN_ENTRIES == BOUND


def test_files_past_the_byte_bound_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    (repo / "big.txt").write_bytes(b"x" * 3000)
    monkeypatch.setattr(checks, "SCAN_BYTES", 4096, raising=False)
    assert _passes(tmp_path)
    (repo / "more.txt").write_bytes(b"y" * 2000)
    assert not _passes(tmp_path)


def test_the_scan_still_finds_markers_and_skips_what_it_did(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "sub" / ".git").mkdir(parents=True)
    (repo / "sub" / ".git" / "x").write_text("<<<<<<< ours\n")  # a nested repository's .git
    (repo / "outside").mkdir()
    (repo / "outside" / "f").write_text("<<<<<<< ours\n")
    os.chmod(repo / "outside", 0)
    try:
        os.symlink(tmp_path / "elsewhere", repo / "link")
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "f").write_text("<<<<<<< ours\n")  # behind a link: not read
        if os.geteuid() != 0:  # root reads a folder of mode 000
            assert _passes(tmp_path)
        os.chmod(repo / "outside", 0o755)
        assert not _passes(tmp_path)
        os.remove(repo / "outside" / "f")
        (repo / "sub" / "deep").mkdir()
        (repo / "sub" / "deep" / "g.py").write_text("a\n=======\nb\n")
        assert not _passes(tmp_path)
    finally:
        os.chmod(repo / "outside", 0o755)
