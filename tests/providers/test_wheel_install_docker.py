"""openenv_gym installed from a wheel (no source checkout) with the docker SDK and an engine.

The wheel carries the Dockerfile (setup.cfg's data_files, under the install's prefix), and the
installed package is packed again as the image's openenv_gym wheel: a wheel install builds
and runs worker images as a checkout does (tested end to end in a venv). Where no Dockerfile
can be found, ``provider="auto"`` (the default) runs workers on the process provider instead
of picking docker and failing, and ``provider="docker"`` names the real problem before it
pulls or builds a base image it could not use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _docker_images, provider_class, resolve_provider_name


@pytest.fixture
def wheel_install(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """An engine answers, but no containers/ folder can be found (a damaged install)."""
    monkeypatch.setenv("OPENENV_GYM_CONTAINERS_DIR", str(tmp_path / "no-containers"))
    monkeypatch.setattr(provider_class("docker"), "available", classmethod(lambda cls: (True, "")))


def test_auto_runs_process_workers_when_no_image_can_be_built(wheel_install) -> None:
    assert resolve_provider_name("auto") == "process"


def test_auto_warns_for_untrusted_envs_with_the_reason(wheel_install) -> None:
    with pytest.warns(RuntimeWarning, match="no Dockerfile at"):
        assert resolve_provider_name("auto", untrusted=True) == "process"


class _NoCalls:
    """A Docker client that fails the test on any use (no pull, no build, no lookup)."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the Docker client was used ({name}) though nothing can be built")


def test_a_build_names_the_missing_checkout_before_touching_the_engine(wheel_install) -> None:
    with pytest.raises(ProviderUnavailableError, match="no Dockerfile at .*source checkout"):
        _docker_images.build_image(_NoCalls(), get_env_info("echo"))


_ROOT = Path(__file__).resolve().parents[2]

_IN_THE_VENV = """
import sys
import gymnasium as gym
import openenv_gym
from openenv_gym.providers import _docker_images, resolve_provider_name
assert openenv_gym.__file__.startswith(sys.prefix), openenv_gym.__file__  # the wheel's copy
assert _docker_images.build_problem() is None, _docker_images.build_problem()
assert resolve_provider_name("auto") == "docker"
env = gym.make("OpenEnv/Echo-v0", provider="docker")
env.reset(seed=0)
print("reward", env.step({"message": "hi"})[1])
print("image", env.unwrapped.worker.image)
env.close()
"""


def _wheel_venv(tmp_path: Path) -> tuple[str, Path]:
    """A venv with this Python's packages and openenv_gym installed from a wheel of this
    checkout: its python, and the wheel."""
    stage = tmp_path / "src"  # a copy: a wheel build writes build/ and egg-info beside setup.cfg
    for name in ("openenv_gym", "containers"):
        shutil.copytree(_ROOT / name, stage / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(_ROOT / name, stage / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                            "--no-build-isolation", "--wheel-dir", str(tmp_path / "dist"), str(stage)], **_RUN)
    assert built.returncode == 0, built.stderr
    venv = tmp_path / "venv"
    assert subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], **_RUN).returncode == 0
    python = str(venv / "bin" / "python")
    [wheel] = (tmp_path / "dist").glob("*.whl")
    # --force-reinstall: the trainer's own openenv-gym (same version) would count as installed.
    installed = subprocess.run([python, "-m", "pip", "install", "--quiet", "--force-reinstall",
                                "--no-deps", "--no-index", str(wheel)], **_RUN)
    assert installed.returncode == 0, installed.stderr
    return python, wheel


_RUN: dict = dict(capture_output=True, text=True, timeout=600)


def test_a_wheel_install_builds_and_runs_docker_workers(tmp_path: Path) -> None:
    # It could not: the Dockerfile and openenv_gym's own wheel came only from a checkout, so a
    # `pip install openenv-gym` ran Coding and Git sandboxes on the process provider.
    from tests.conftest import require_docker

    require_docker()
    python, _ = _wheel_venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([python, "-c", _IN_THE_VENV], cwd=tmp_path, env=env, **_RUN)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["reward"] == "0.2"
    import docker

    client = docker.from_env()
    try:  # an image of this very wheel: nobody else runs it
        client.images.remove(lines["image"])
    except docker.errors.APIError:
        pass
    finally:
        client.close()


_REPACK = """
import sys
from pathlib import Path
from openenv_gym.providers import _docker_images as d
target = d._build_self_wheel(d.source_hash(), lambda _: None)
assert d.__file__.startswith(sys.prefix), d.__file__
print(next(Path(target).glob("*.whl")))
"""



def test_the_repacked_wheel_has_every_file_of_the_installed_one(tmp_path: Path) -> None:
    # The image's openenv_gym wheel, packed again from a wheel install, holds every file of the
    # wheel installed but the data files (containers/, which the image does not need): its
    # .dist-info/licenses/LICENSE too, which METADATA's License-File names (it was dropped).
    python, wheel = _wheel_venv(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    done = subprocess.run([python, "-c", _REPACK], cwd=tmp_path, env=env, **_RUN)
    assert done.returncode == 0, done.stderr
    repacked = zipfile.ZipFile(done.stdout.strip()).namelist()
    expected = [n for n in zipfile.ZipFile(wheel).namelist() if ".data/data/" not in n]
    assert sorted(set(expected) - set(repacked)) == []
