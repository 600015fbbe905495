"""The image inputs' cache: a wheel folder is complete or absent, and made once."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _docker_images


@pytest.fixture(autouse=True)
def _no_index(monkeypatch: pytest.MonkeyPatch) -> None:
    # A build that falls back to build isolation would fetch its backend from an index:
    # tests reach loopback only.
    monkeypatch.setenv("PIP_NO_INDEX", "1")


def _project(root: Path, name: str = "tinyplug") -> list[Path]:
    (root / name).mkdir(parents=True)
    files = {
        root / "setup.cfg": f"[metadata]\nname = {name}\nversion = 0.1\n\n[options]\npackages = {name}\n",
        root / "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n'
                                 'build-backend = "setuptools.build_meta"\n',
        root / name / "__init__.py": "X = 1\n",
    }
    for path, text in files.items():
        path.write_text(text)
    return list(files)


def test_a_wheel_folder_left_without_a_wheel_is_built_again(tmp_path: Path) -> None:
    # A cache folder of the right name but no wheel in it (half-made, or emptied by hand) used
    # to be returned as it was: the image build then found no wheel to install.
    files = _project(tmp_path / "src")
    target = tmp_path / "wheels" / "plugin-tiny-0123"
    target.mkdir(parents=True)
    (target / "leftover.txt").write_text("not a wheel")
    steps: list[str] = []
    out = _docker_images._build_wheel("tiny", tmp_path / "src", files, target, steps.append)
    assert out == target
    assert [p.name for p in target.glob("*.whl")] == ["tinyplug-0.1-py3-none-any.whl"]
    assert not (target / "leftover.txt").exists()
    assert steps == ["building the tiny wheel"]
    # Made once: a second call finds it.
    _docker_images._build_wheel("tiny", tmp_path / "src", files, target, steps.append)
    assert steps == ["building the tiny wheel"]
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no temp folder left


def test_a_failed_build_leaves_neither_the_target_nor_a_temp_folder(tmp_path: Path) -> None:
    files = _project(tmp_path / "src")
    (tmp_path / "src" / "setup.cfg").write_text("[metadata]\nname = \n[options]\npackages = nope\n")
    target = tmp_path / "wheels" / "plugin-broken-0123"
    with pytest.raises(ProviderUnavailableError,
                       match="(?s)could not build the broken wheel.*with build isolation.*fix: "):
        _docker_images._build_wheel("broken", tmp_path / "src", files, target, lambda _: None)
    assert list(target.parent.iterdir()) == []


# An in-tree build backend that builds only in pip's isolated build environment (there
# numpy, installed here, cannot be imported): what a project whose backend the trainer's
# Python lacks looks like, with no index needed (it requires nothing).
_BACKEND = textwrap.dedent("""
    import base64, hashlib, importlib.util, os, zipfile

    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        if importlib.util.find_spec("numpy") is not None:
            raise RuntimeError("this backend needs an isolated build")
        name = "isoplug-0.1-py3-none-any.whl"
        files = {"isoplug/__init__.py": b"X = 1\\n",
                 "isoplug-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\\nName: isoplug\\nVersion: 0.1\\n",
                 "isoplug-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
        record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}"
                  for path, data in files.items()] + ["isoplug-0.1.dist-info/RECORD,,"]
        with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
            for path, data in files.items():
                z.writestr(path, data)
            z.writestr("isoplug-0.1.dist-info/RECORD", "\\n".join(record) + "\\n")
        return name
""")


def test_a_backend_missing_here_builds_isolated_as_pip_install_did(tmp_path: Path) -> None:
    root = tmp_path / "src"
    (root / "isoplug").mkdir(parents=True)
    files = {root / "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                      'backend-path = ["."]\n',
             root / "backend.py": _BACKEND, root / "isoplug" / "__init__.py": "X = 1\n"}
    for path, text in files.items():
        path.write_text(text)
    target = tmp_path / "wheels" / "plugin-iso-0123"
    out = _docker_images._build_wheel("iso", root, list(files), target, lambda _: None)
    assert [p.name for p in out.glob("*.whl")] == ["isoplug-0.1-py3-none-any.whl"]


def test_the_local_base_tag_names_its_debian_suite(monkeypatch) -> None:
    # Another suite builds another base: a tag that said "bookworm" whatever the suite reused
    # the bookworm base silently.
    from openenv_gym.providers._docker_images import IMAGE_REPO, local_base_tag

    monkeypatch.delenv("OPENENV_GYM_DEBIAN_SUITE", raising=False)
    bookworm = local_base_tag()
    assert bookworm.startswith(f"{IMAGE_REPO}/base:bookworm-")
    monkeypatch.setenv("OPENENV_GYM_DEBIAN_SUITE", "trixie")
    assert local_base_tag() == bookworm.replace(":bookworm-", ":trixie-")
