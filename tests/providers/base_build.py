"""A stand-in for the local base image's build, for tests of how trainers run it.

:func:`stand_in_base_build` makes ``ensure_base`` of a trainer started with its environment
find no base image (the configured one is never found: its pull is refused on loopback) and
build with the given script instead of ``containers/build-base.sh``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from tests.conftest import require_docker


def stand_in_base_build(tmp_path: Path, script: str) -> dict[str, str]:
    """The environment of a trainer whose missing base image is built by ``script``.

    Args:
        tmp_path: The test's folder (the build cache and TMPDIR go there).
        script: The build script, a ``str.format`` template: ``{token}`` is filled with a
            token of its own (the base tag hashes the script, so the test's never meets a
            real one), ``{shared}`` with ``tmp_path``.

    Returns:
        ``os.environ`` with the variables that point the trainer at the script.
    """
    require_docker()
    containers = tmp_path / "containers"
    containers.mkdir()
    (containers / "build-base.sh").write_text(script.format(token=secrets.token_hex(8), shared=tmp_path))
    return dict(os.environ, OPENENV_GYM_CACHE=str(tmp_path / "cache"), TMPDIR=str(tmp_path),
                OPENENV_GYM_CONTAINERS_DIR=str(containers),
                OPENENV_GYM_BASE_IMAGE="127.0.0.1:9/openenv-gym-test-absent:none")
