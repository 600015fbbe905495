"""The oldest Python setup.cfg admits (python_requires) can install and import the package,
and `openenv-gym doctor` draws the same line."""

from __future__ import annotations

import ast
import collections
import configparser
import importlib.metadata
import sys
from pathlib import Path

import pytest

packaging = pytest.importorskip("packaging")
from packaging.requirements import Requirement  # noqa: E402
from packaging.specifiers import SpecifierSet  # noqa: E402
from packaging.version import Version  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: Standard-library modules that need a recent Python, with the release that added them
#: (the floor is what setup.cfg says; this lists what would break a lower one).
NEW_STDLIB = {"tomllib": (3, 11), "wsgiref.types": (3, 11)}


def _options() -> configparser.SectionProxy:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg["options"]


def _floor() -> tuple[int, int]:
    spec = next(s for s in SpecifierSet(_options()["python_requires"]) if s.operator == ">=")
    return Version(spec.version).release[:2]  # type: ignore[return-value]


def test_python_requires_admits_no_python_a_core_requirement_refuses() -> None:
    """A core requirement whose lowest allowed release needs a newer Python than
    python_requires's floor makes `pip install` fail there, after the python_requires gate."""
    floor = "{}.{}.0".format(*_floor())
    checked = 0
    for line in _options()["install_requires"].split():
        req = Requirement(line)
        lows = [s.version for s in req.specifier if s.operator == ">="]
        try:
            dist = importlib.metadata.distribution(req.name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if not lows or Version(dist.version) != Version(lows[0]):
            continue  # only the floor release's own metadata says what the floor needs
        checked += 1
        needs = dist.metadata.get("Requires-Python")
        assert not needs or SpecifierSet(needs).contains(floor), (
            f"{req} (release {dist.version} needs Python {needs}) cannot install on Python {floor}")
    if not checked:
        pytest.skip("no core requirement is installed at its floor release")


def test_the_package_imports_no_stdlib_module_newer_than_the_floor() -> None:
    floor = _floor()
    for path in sorted((ROOT / "openenv_gym").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [])
            for name in names:
                added = NEW_STDLIB.get(name)
                assert added is None or added <= floor, (
                    f"{path.relative_to(ROOT)}:{node.lineno} imports {name} (Python "
                    f"{added[0]}.{added[1]}+), but python_requires admits {floor[0]}.{floor[1]}")


def test_doctor_draws_the_line_at_python_requires(monkeypatch: pytest.MonkeyPatch) -> None:
    from openenv_gym.cli import doctor

    vi = collections.namedtuple("vi", "major minor micro releaselevel serial")
    major, minor = _floor()
    monkeypatch.setattr(sys, "version_info", vi(major, minor, 0, "final", 0))
    assert doctor.check_python()[0].status == "ok"
    monkeypatch.setattr(sys, "version_info", vi(major, minor - 1, 13, "final", 0))
    assert doctor.check_python()[0].status == "fail"
