"""A pool or worker folder made again after the runtime folder went (rm -rf /tmp/*: a Docker
worker's restart makes its folder again) sits in a runtime folder as private as runtime_dir()
makes it: a Docker worker's folder is open to all (0777) while its container starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers._runtime import make_owned_folder


def test_a_runtime_folder_made_again_is_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        root = tmp_path / "openenv-gym-x"
        make_owned_folder(str(root / f"{os.getpid()}-p1-docker-w0"))
    finally:
        os.umask(old)
    assert oct(root.stat().st_mode & 0o777) == "0o700"  # was 0o755, the umask's


def test_a_runtime_folder_open_to_others_is_closed(tmp_path: Path) -> None:
    root = tmp_path / "openenv-gym-x"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    make_owned_folder(str(root / f"{os.getpid()}-p1"))
    assert oct(root.stat().st_mode & 0o777) == "0o700"


def test_a_runtime_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "openenv-gym-x").symlink_to(elsewhere)
    with pytest.raises(ProviderUnavailableError):
        make_owned_folder(str(tmp_path / "openenv-gym-x" / f"{os.getpid()}-p1"))
