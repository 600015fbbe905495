"""A plugin env whose Box action has an integer dtype (no built-in env has one), and a fixture
that installs it as a plugin for one test: a dist-info on ``sys.path`` (the trainer's) and on
``PYTHONPATH`` (its workers', whose catalog is read as they start)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.catalog import EnvInfo
from openenv_gym.envs.base import Environment


class IntBoxEnv(Environment):
    """Reward: the sum of the action, a Box of two int64 in [0, 5]."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Box(-1, 1, (2,), np.float32)
        self.action_space = spaces.Box(0, 5, (2,), np.int64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), float(np.sum(action)), False, False, {}


def env_info() -> EnvInfo:
    return EnvInfo("intbox", "OpenEnvTest/IntBox-v0", "tests.vector.intbox_env:IntBoxEnv",
                   "test plugin: an integer-dtype Box action")


@pytest.fixture
def intbox_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The plugin's name, installed for this test (the trainer and the workers it starts)."""
    from openenv_gym import catalog

    dist = tmp_path / "intbox_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: intbox-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[openenv_gym.envs]\nintbox = tests.vector.intbox_env:env_info\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(tmp_path), os.environ.get("PYTHONPATH")))))
    monkeypatch.setattr(catalog, "_cache", None)
    yield "intbox"
