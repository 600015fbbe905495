"""The image's requirements are pinned to the host's versions also where `packaging` is not
importable on its own: a venv with `pip install 'openenv-gym[docker]'` has none (neither docker
nor setuptools installs it). The pins were dropped there without a word, so the container's
worker ran whatever versions the download resolved that day (numpy 2 beside a trainer on numpy
1.24, another gymnasium) while README promises the host's versions."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.providers import _docker_images


@pytest.fixture
def no_packaging(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "packaging" or m.startswith("packaging.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "packaging", None)  # `import packaging...` raises ImportError
    monkeypatch.setitem(sys.modules, "packaging.requirements", None)


def test_requirements_are_pinned_to_the_host_without_packaging(no_packaging) -> None:
    with pytest.raises(ImportError):
        import packaging.requirements  # noqa: F401
    pins = _docker_images.requirements(get_env_info("echo"))
    for name in ("numpy", "gymnasium", "pydantic"):
        assert f"{name}=={importlib.metadata.version(name)}" in pins, pins


def test_the_docker_extra_installs_packaging() -> None:
    import configparser
    from pathlib import Path

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    docker = cfg["options.extras_require"]["docker"].split()
    assert any(r.startswith("packaging") for r in docker), docker
