"""Pinning an image requirement to the host's version changes only its version: a plugin that
needs ``gymnasium[box2d]`` got ``gymnasium==X`` in its image (no Box2D there, the env failed at
make in the container only), and a marker (``; python_version < "3.10"``) was dropped."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from openenv_gym.providers import _docker_images


@pytest.fixture(params=["packaging", "pip-vendored"])
def which_packaging(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param == "pip-vendored":
        for name in [m for m in sys.modules if m == "packaging" or m.startswith("packaging.")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "packaging", None)
        monkeypatch.setitem(sys.modules, "packaging.requirements", None)


def test_extras_stay(which_packaging) -> None:
    version = importlib.metadata.version("gymnasium")
    assert _docker_images._pin("gymnasium[box2d]>=1") == f"gymnasium[box2d]=={version}"


def test_markers_stay(which_packaging) -> None:
    version = importlib.metadata.version("numpy")
    pinned = _docker_images._pin("numpy>=1; python_version < '3.10'")
    assert pinned.startswith(f"numpy=={version}") and "python_version" in pinned


def test_plain_requirements_are_pinned_as_before(which_packaging) -> None:
    assert _docker_images._pin("numpy>=1") == f"numpy=={importlib.metadata.version('numpy')}"
