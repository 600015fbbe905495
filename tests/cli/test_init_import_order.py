"""A scaffolded env stays registered when a script imports its package before openenv_gym
(`from my_env.models import MyEnvAction` at the top of a training script).

No pip: the "installation" is a dist-info with the entry point in a folder on PYTHONPATH,
as pip would write it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_gym.scaffold import create

NAME, GYM_ID = "qa_import_order", "OpenEnv/QaImportOrder-v0"


def _installed(tmp_path: Path) -> dict[str, str]:
    create(NAME, str(tmp_path))
    site = tmp_path / "site" / f"{NAME}-0.1.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {NAME}\nVersion: 0.1.0\n")
    (site / "entry_points.txt").write_text(f"[openenv_gym.envs]\n{NAME} = {NAME}:env_info\n")
    path = os.pathsep.join([str(tmp_path / NAME), str(tmp_path / "site"),
                            os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


@pytest.mark.parametrize("first", [f"import {NAME}", f"from {NAME}.models import QaImportOrderAction",
                                   f"from {NAME}.env import QaImportOrderEnv", "import openenv_gym"])
def test_the_env_is_registered_whatever_is_imported_first(tmp_path: Path, first: str) -> None:
    script = (f"import warnings; warnings.simplefilter('error')\n{first}\n"
              "import gymnasium as gym, openenv_gym\n"
              f"assert {GYM_ID!r} in gym.registry, 'not registered'\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_installed(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_scaffold_env_renders_without_gymnasium_warnings(tmp_path: Path) -> None:
    # Its metadata lacked render_fps: gym.make(..., render_mode="ansi") warned "No render fps".
    script = ("import warnings; warnings.simplefilter('error')\n"
              "import gymnasium as gym, openenv_gym\n"
              f"env = gym.make({GYM_ID!r}, provider='process', render_mode='ansi')\n"
              "env.reset(seed=0)\n"
              "assert isinstance(env.render(), str)\n"
              "env.close()\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_installed(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
