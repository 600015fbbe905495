"""An env whose extra is not installed in the worker says which extra to install.

A core-only install (``pip install openenv-gym``) runs ``gym.make("OpenEnv/Atari-v0")``:
the worker cannot import ale_py, and the error must name ``pip install 'openenv-gym[atari]'``
(as ``openenv-gym doctor`` does), not only ``No module named 'ale_py'``.
"""

from __future__ import annotations

import sys

import pytest

from openenv_gym import catalog
from openenv_gym.catalog import EnvInfo
from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.server.main import build_service

MISSING = "openenv_gym_qa_no_such_package"


def _plugin(monkeypatch: pytest.MonkeyPatch, tmp_path, source: str, extra: str | None) -> None:
    """A plugin env ``needsextra`` from a module written with ``source``."""
    (tmp_path / "needsextra_mod.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "needsextra_mod", raising=False)
    info = EnvInfo("needsextra", "OpenEnv/NeedsExtra-v0", "needsextra_mod:NeedsExtraEnv",
                   "an env whose package is missing", modules=(MISSING,), extra=extra)
    monkeypatch.setattr(catalog, "_plugin_envs", lambda: [info])
    monkeypatch.setattr(catalog, "_cache", None)


LAZY = f"""
from openenv_gym.envs.base import Environment

class NeedsExtraEnv(Environment):
    def __init__(self):
        import {MISSING}  # as Atari-v0 imports ale_py and FinRL-v0 pandas
"""

EAGER = f"""
import {MISSING}
from openenv_gym.envs.base import Environment

class NeedsExtraEnv(Environment):
    pass
"""


@pytest.mark.parametrize("source", [LAZY, EAGER], ids=["in-constructor", "at-import"])
def test_a_missing_package_names_the_extra_to_install(monkeypatch, tmp_path, source) -> None:
    _plugin(monkeypatch, tmp_path, source, extra="atari")
    with pytest.raises(ProviderUnavailableError) as raised:
        build_service("needsextra")
    message = str(raised.value)
    assert "pip install 'openenv-gym[atari]'" in message and MISSING in message


def test_a_missing_package_of_an_env_without_extra_names_the_module(monkeypatch, tmp_path) -> None:
    _plugin(monkeypatch, tmp_path, LAZY, extra=None)
    with pytest.raises(ProviderUnavailableError, match=f"install the package that provides '{MISSING}'"):
        build_service("needsextra")
