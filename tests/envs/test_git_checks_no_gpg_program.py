"""The checks' git calls run no program of the repository's config: ``git log`` (commit_message,
reverts) would run ``gpg.program`` for a commit with a ``gpgsig`` header when the repo sets
``log.showSignature``, from the worker's long-lived confined thread (which that program could
then signal) and without the agent's ulimits."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from openenv_gym.envs.git import checks

from tests.envs._check_context import FolderChecks


def test_commit_message_runs_no_gpg_program(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "base"], check=True)
    tree = subprocess.run([*git, "write-tree"], check=True, capture_output=True, text=True).stdout.strip()
    body = (f"tree {tree}\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n\nAdd b\n")
    commit = subprocess.run([*git, "hash-object", "-t", "commit", "-w", "--stdin"], input=body,
                            check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run([*git, "update-ref", "HEAD", commit], check=True)
    marker = tmp_path / "ran"
    program = tmp_path / "gpg.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    subprocess.run([*git, "config", "log.showSignature", "true"], check=True)
    subprocess.run([*git, "config", "gpg.program", str(program)], check=True)

    assert checks.commit_message(FolderChecks(tmp_path), str(repo), "^Add b$")
    assert not marker.exists(), "a check's git log ran the repository's gpg.program"
