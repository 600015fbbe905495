"""``openenv-gym --version``, as ``docker --version`` and ``pip --version`` answer."""

from __future__ import annotations

import openenv_gym
from tests.cli.cli_helpers import run


def test_version_prints_the_installed_version_and_exits_zero() -> None:
    out = run("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"openenv-gym {openenv_gym.__version__}"
