"""`openenv-gym doctor` checks the packages the project declares, not a list of its own:
setup.cfg's install_requires, and each catalog env's worker modules (EnvInfo.modules)."""

from __future__ import annotations

import configparser
import importlib.util
import re
from pathlib import Path

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.cli import doctor

ROOT = Path(__file__).resolve().parents[2]


def _install_requires() -> set[str]:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return {re.split(r"[\s<>=!~;\[(]", line, maxsplit=1)[0]
            for line in cfg["options"]["install_requires"].split("\n") if line.strip()}


def test_every_core_requirement_is_checked() -> None:
    checked = {c.area.removeprefix("package ") for c in doctor.check_packages()}
    assert _install_requires() <= checked, f"unchecked: {_install_requires() - checked}"


@pytest.mark.parametrize("env", ["atari", "finrl", "coding"])
def test_a_missing_env_module_is_a_warning_naming_the_extra(env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    info = get_env_info(env)
    real = importlib.util.find_spec
    for module in (*info.modules, *info.optional_modules):  # each module of the env, hidden in turn
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, _m=module: None if name == _m else real(name, *a))
        warned = [c for c in doctor.check_packages() if c.status == "warn" and f"openenv-gym[{info.extra}]" in c.fix]
        assert warned, f"doctor does not notice {module} (needed by {info.gym_id}) is missing"
