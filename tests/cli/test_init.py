"""``openenv-gym init``: scaffold -> its own tests pass -> pip install -e -> gym.make -> step."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cli.cli_helpers import ENV, SCAFFOLD_EPISODE, run

def _script(provider: str) -> str:
    """A script that makes the installed scaffold env on ``provider`` and drives an episode."""
    return ("import gymnasium as gym, openenv_gym\n"
            f'env = gym.make("OpenEnv/ScaffoldProbe-v0", provider="{provider}")\n'
            + SCAFFOLD_EPISODE + 'env.close()\nprint("OK", env.spec.id if env.spec else "")\n')


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                          capture_output=True, text=True, timeout=300)


def test_init_rejects_bad_names_and_existing_folders(tmp_path) -> None:
    for name in ("My-Env", "class", "echo", "json"):
        out = run("init", name, "--dir", str(tmp_path))
        assert out.returncode == 2 and "error:" in out.stderr, name
    (tmp_path / "taken" / "x").mkdir(parents=True)
    (tmp_path / "taken" / "x" / "f").write_text("")
    out = run("init", "taken", "--dir", str(tmp_path))
    assert out.returncode == 1 and "--force" in out.stderr


def test_init_install_make_step(tmp_path) -> None:
    out = run("init", "scaffold_probe", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "OpenEnv/ScaffoldProbe-v0" in out.stdout
    root = tmp_path / "scaffold_probe"
    for rel in ("pyproject.toml", "README.md", "scaffold_probe/models.py",
                "scaffold_probe/env.py", "scaffold_probe/__init__.py", "tests/test_env.py"):
        assert (root / rel).is_file(), rel

    # Its own tests pass as generated (the remote ones skip until it is installed).
    generated = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                               cwd=root, capture_output=True, text=True, timeout=300, env=ENV)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert "4 passed, 2 skipped" in generated.stdout

    installed = _pip("install", "--no-deps", "--no-build-isolation", "-e", str(root))
    assert installed.returncode == 0, installed.stderr
    try:
        listed = run("list")
        assert "OpenEnv/ScaffoldProbe-v0" in listed.stdout
        generated = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                                   cwd=root, capture_output=True, text=True, timeout=300, env=ENV)
        assert generated.returncode == 0 and "6 passed" in generated.stdout, generated.stdout
        # From another folder: the package is found through its installed entry point only.
        made = subprocess.run([sys.executable, "-c", _script("process")],
                              cwd=tmp_path.parent, capture_output=True, text=True, timeout=300, env=ENV)
        assert made.returncode == 0 and "OK OpenEnv/ScaffoldProbe-v0" in made.stdout, made.stderr
    finally:
        assert _pip("uninstall", "-y", "scaffold-probe").returncode == 0
