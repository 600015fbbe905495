"""plugin_source finds a plugin's folder when the project's own egg-info shadows its
installed dist-info (Python run from the project folder after `pip install -e .`)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from openenv_gym.catalog import EnvInfo
from openenv_gym.providers import _docker_images

EP = "[openenv_gym.envs]\nshadowplug = shadowplug:env_info\n"


def _editable_install(tmp_path: Path) -> tuple[Path, Path]:
    """What `pip install -e proj` leaves: an egg-info in proj, a dist-info with
    direct_url.json in site-packages."""
    proj, site = tmp_path / "proj", tmp_path / "site"
    (proj / "shadowplug").mkdir(parents=True)
    (proj / "shadowplug" / "__init__.py").write_text("")
    (proj / "pyproject.toml").write_text('[project]\nname = "shadowplug"\nversion = "0.1"\n')
    egg = proj / "shadowplug.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: shadowplug\nVersion: 0.1\n")
    (egg / "entry_points.txt").write_text(EP)
    dist = site / "shadowplug-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shadowplug\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(EP)
    (dist / "direct_url.json").write_text(json.dumps(
        {"url": proj.as_uri(), "dir_info": {"editable": True}}))
    return proj, site


INFO = EnvInfo("shadowplug", "OpenEnv/Shadowplug-v0", "shadowplug.env:ShadowEnv", "test plugin")


def test_plugin_source_from_another_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj, site = _editable_install(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert _docker_images.plugin_source(INFO) == proj


def test_plugin_source_from_the_project_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # sys.path[0] is the project folder (python -c / -m run there): its egg-info comes first.
    proj, site = _editable_install(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(proj))
    importlib.invalidate_caches()
    assert _docker_images.plugin_source(INFO) == proj
