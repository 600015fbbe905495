"""The wheel and the sdist carry everything openenv_gym reads at run time.

Every other test runs from the checkout, where each file of the package is on disk: a file the
package reads but setup.cfg's ``package_data`` globs miss (a new web asset beside
``server/web/index.html``, a template, a task file) passes them all and is missing only after
``pip install openenv-gym``. Built offline (no build isolation, no index) from a staged copy,
so the checkout gets no ``build/`` or ``egg-info``; a few seconds.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("setuptools")

ROOT = Path(__file__).resolve().parents[1]
#: Where a wheel install keeps containers/ (setup.cfg's data_files), as the docker provider
#: looks for it.
CONTAINERS = "share/openenv-gym/containers"
_RUN: dict = dict(capture_output=True, text=True, timeout=300)


def _package_files(root: Path) -> set[str]:
    """Every file of the package in ``root`` (what a wheel must hold), as wheel paths."""
    return {p.relative_to(root).as_posix() for p in (root / "openenv_gym").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")}


#: Folders of the project that the sdist carries besides the package (MANIFEST.in).
SDIST_FOLDERS = ("tests", "examples", "benchmarks", "docs", "containers")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "_build", "*.log")


def _files(root: Path, folder: str) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / folder).rglob("*")
            if p.is_file() and not _IGNORE(str(p.parent), [p.name]) and "__pycache__" not in p.parts}


def _stage(tmp_path: Path) -> Path:
    stage = tmp_path / "src"
    for name in ("openenv_gym", *SDIST_FOLDERS):
        shutil.copytree(ROOT / name, stage / name, ignore=_IGNORE)
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, stage / name)
    return stage


def _wheel(project: Path, out: Path) -> zipfile.ZipFile:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index",
                            "--no-build-isolation", "--wheel-dir", str(out), str(project)], **_RUN)
    assert built.returncode == 0, built.stderr
    [wheel] = out.glob("*.whl")
    return zipfile.ZipFile(wheel)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The wheel of the checkout, the sdist, and the wheel built from that sdist."""
    tmp = tmp_path_factory.mktemp("packaging")
    stage = _stage(tmp)
    wheel = _wheel(stage, tmp / "wheel")
    made = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta as b; "
                           "print(b.build_sdist(sys.argv[1]))", str(tmp / "sdist")], cwd=stage, **_RUN)
    assert made.returncode == 0, made.stderr
    sdist = tmp / "sdist" / made.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    [unpacked] = (tmp / "unpacked").iterdir()
    return {"stage": stage, "wheel": wheel, "unpacked": unpacked,
            "from_sdist": _wheel(unpacked, tmp / "wheel-from-sdist")}


def test_the_wheel_holds_every_file_of_the_package(built: dict) -> None:
    names = set(built["wheel"].namelist())
    missing = sorted(_package_files(built["stage"]) - names)
    assert missing == [], f"in openenv_gym/ but not in the wheel (setup.cfg package_data): {missing}"
    # What the package reads by path at run time, named outright.
    for name in ("openenv_gym/py.typed", "openenv_gym/server/web/index.html",
                 "openenv_gym/envs/git/tasks.toml", "openenv_gym/scaffold/templates/pyproject.toml.tmpl"):
        assert name in names, name


def test_the_wheel_carries_the_dockerfile_where_the_docker_provider_looks(built: dict) -> None:
    data = {n.split(".data/data/", 1)[1] for n in built["wheel"].namelist() if ".data/data/" in n}
    assert {f"{CONTAINERS}/Dockerfile", f"{CONTAINERS}/build-base.sh"} <= data, data
    from openenv_gym.providers import _docker_images

    assert _docker_images._INSTALLED_CONTAINERS == CONTAINERS


def test_the_wheel_holds_nothing_else(built: dict) -> None:
    stray = [n for n in built["wheel"].namelist()
             if not n.startswith(("openenv_gym/", "openenv_gym-")) or n.startswith("openenv_gym/tests")]
    assert stray == []


def test_the_wheel_metadata_matches_setup_cfg(built: dict) -> None:
    wheel = built["wheel"]
    info = next(n.split("/")[0] for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = wheel.read(f"{info}/METADATA").decode()
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert f"Requires-Python: {cfg['options']['python_requires']}" in meta
    for extra in cfg["options.extras_require"]:
        assert f"Provides-Extra: {extra}" in meta, extra
    assert f"{info}/licenses/LICENSE" in wheel.namelist()
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(f"{info}/entry_points.txt").decode())
    assert entry_points["console_scripts"]["openenv-gym"] == "openenv_gym.cli:main"
    from openenv_gym.cli import main

    assert callable(main)


def test_a_wheel_built_from_the_sdist_is_the_same(built: dict) -> None:
    # `pip install openenv-gym` where no wheel fits builds one from the sdist: it must lose
    # nothing (MANIFEST, data_files).
    def files(wheel: zipfile.ZipFile) -> set[str]:
        return {n for n in wheel.namelist() if not n.endswith(".dist-info/RECORD")}

    assert files(built["from_sdist"]) == files(built["wheel"])


def test_the_sdist_holds_the_whole_project(built: dict) -> None:
    # A packager runs the tests from the sdist: all of them, with what they read.
    for folder in SDIST_FOLDERS:
        missing = sorted(_files(built["stage"], folder) - _files(built["unpacked"], folder))
        assert missing == [], f"not in the sdist (MANIFEST.in): {missing}"
