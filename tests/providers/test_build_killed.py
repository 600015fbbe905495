"""A trainer killed while it builds a worker image leaves no build context behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import require_docker

pytestmark = pytest.mark.docker

_KILLED_MID_BUILD = textwrap.dedent("""
    import os, signal
    import docker
    from openenv_gym.catalog import get_env_info
    from openenv_gym.providers import _docker_images

    def killed(*args, **kwargs):  # the build context is complete here: the trainer dies
        os.kill(os.getpid(), signal.SIGKILL)

    _docker_images._docker_build = killed
    _docker_images.build_image(docker.from_env(), get_env_info("echo"), no_cache=True)
""")


def test_a_trainer_killed_mid_build_leaves_no_build_context(tmp_path) -> None:
    require_docker()
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", _KILLED_MID_BUILD], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # The next trainer's first use of the runtime folder sweeps what dead owners left.
    subprocess.run([sys.executable, "-c", "from openenv_gym.providers._runtime import runtime_dir; runtime_dir()"],
                   env=env, check=True, timeout=60)
    left = [p.name for p in tmp_path.iterdir() if p.name != f"openenv-gym-{os.getuid()}"]
    runtime = tmp_path / f"openenv-gym-{os.getuid()}"
    left += [f"{runtime.name}/{p.name}" for p in runtime.iterdir()] if runtime.is_dir() else []
    # was: openenv-gym-ctx-* (the Dockerfile and every wheel of the image) left in $TMPDIR for good
    assert left == [], left
