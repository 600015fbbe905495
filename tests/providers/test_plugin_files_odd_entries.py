"""A plugin's project folder with a dangling link, a FIFO or a venv in it: the image inputs'
hash neither crashes nor blocks, and reads no venv."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from openenv_gym.providers import _docker_images


def _folder(root: Path) -> Path:
    (root / "plug").mkdir(parents=True)
    (root / "plug" / "__init__.py").write_text("X = 1\n")
    (root / "pyproject.toml").write_text('[project]\nname = "plug"\nversion = "0.1"\n')
    return root


def test_dangling_links_fifos_and_venvs_are_left_out(tmp_path: Path) -> None:
    root = _folder(tmp_path / "proj")
    os.symlink("/nonexistent/dataset", root / "data")          # a link to data not mounted now
    os.mkfifo(root / "progress.fifo")                           # would block a read
    (root / "venv" / "lib").mkdir(parents=True)                 # python -m venv venv
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "venv" / "lib" / "big.py").write_text("x = 1\n")
    names: list[str] = []
    worker = threading.Thread(target=lambda: names.extend(
        str(p.relative_to(root)) for p in _docker_images._plugin_files(root)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "listing the plugin's files blocked"
    assert sorted(names) == ["plug/__init__.py", "pyproject.toml"]
