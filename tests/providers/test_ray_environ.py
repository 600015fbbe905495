"""Importing the Ray provider leaves the process environment alone: it set
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which on Linux turned Ray's multi-node support off in the
trainer and in every child of it (`ray start --address=...` from the trainer's launcher refused
"Multi-node Ray clusters are not supported on Windows and OSX")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("ray")

VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def test_importing_the_ray_provider_does_not_change_os_environ() -> None:
    code = (
        "import os, sys\n"
        "import openenv_gym.providers.ray\n"
        "import ray._private.ray_constants as rc\n"
        f"assert {VAR!r} not in os.environ, os.environ[{VAR!r}]\n"
        "assert rc.ENABLE_RAY_CLUSTER == (sys.platform not in ('darwin', 'win32'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != VAR}  # tests/providers/conftest sets it
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
