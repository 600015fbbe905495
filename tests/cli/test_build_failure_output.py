"""`openenv-gym build` whose image fails to build shows what the failing step printed. The
table cut the error to its first 300 characters: the engine's one line and the build's first
steps (ARG, FROM, ENV), never the output of the step that failed, while its `fix:` line said
"fix what the table names".

A real engine, building from a copy of containers/ whose Dockerfile has a step that fails
right after FROM."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from openenv_gym.providers._docker_images import containers_dir
from tests.cli.cli_helpers import run
from tests.conftest import require_docker

pytestmark = pytest.mark.docker


def test_a_failed_build_shows_the_failing_steps_output(tmp_path: Path) -> None:
    require_docker()
    shutil.copy2(containers_dir() / "build-base.sh", tmp_path)  # the same base tag
    dockerfile = (containers_dir() / "Dockerfile").read_text()
    # The output is made by the step, so the engine's error line (which quotes the command)
    # does not hold it.
    broken = dockerfile.replace("FROM ${BASE_IMAGE}\n", "FROM ${BASE_IMAGE}\n"
                                "RUN printf '%s-%s\\n' wheel-mismatch detail >&2; exit 3\n", 1)
    assert broken != dockerfile
    (tmp_path / "Dockerfile").write_text(broken)
    out = run("build", "echo", env={"OPENENV_GYM_CONTAINERS_DIR": str(tmp_path)}, timeout=900)
    assert out.returncode == 1, out.stderr
    assert "returned a non-zero code: 3" in out.stdout + out.stderr
    assert "wheel-mismatch-detail" in out.stdout + out.stderr  # was cut away


def test_a_cache_folder_that_cannot_be_made_is_named_with_the_fix(tmp_path: Path) -> None:
    # A cache under a file (or in a read-only home) ended `openenv-gym build` (and a first
    # gym.make) in a FileNotFoundError/NotADirectoryError traceback.
    require_docker()
    (tmp_path / "file").write_text("")
    out = run("build", "echo", env={"OPENENV_GYM_CACHE": str(tmp_path / "file" / "cache")},
              timeout=900)
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert "OPENENV_GYM_CACHE" in out.stdout + out.stderr
