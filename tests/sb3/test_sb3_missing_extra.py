"""Without Stable-Baselines3, ``import openenv_gym.sb3`` names the extra that installs it."""

from __future__ import annotations

import subprocess
import sys


def test_import_without_sb3_names_the_extra() -> None:
    # A fresh interpreter, where SB3 counts as not installed (None in sys.modules blocks the
    # import); in this one, other tests have imported it already.
    code = "import sys\nsys.modules['stable_baselines3'] = None\nimport openenv_gym.sb3\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "ModuleNotFoundError: openenv_gym.sb3 needs Stable-Baselines3" in out.stderr
    assert "pip install 'openenv-gym[sb3]'" in out.stderr
