"""The image inputs' cache: a wheel folder is complete or absent, and made once."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _docker_images


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
    with pytest.raises(ProviderUnavailableError, match="could not build the broken wheel"):
        _docker_images._build_wheel("broken", tmp_path / "src", files, target, lambda _: None)
    assert list(target.parent.iterdir()) == []
