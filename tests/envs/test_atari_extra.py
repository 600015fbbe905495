"""`pip install 'openenv-gym[atari]'` must bring an ale-py that Atari-v0 runs on: make_ale_env
passes ALE's continuous-action arguments and the preprocessed fast step calls
``ale.act(action, strength)``, both new in ale-py 0.10. With ale-py 0.9.1, which ``ale-py>=0.9``
admitted (and which plays ``gym.make("ALE/Pong-v5")`` with our Gymnasium), every make failed:
"AtariEnv.__init__() got an unexpected keyword argument 'continuous'"."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

SETUP_CFG = Path(__file__).resolve().parents[2] / "setup.cfg"


def test_atari_extra_admits_no_ale_py_without_continuous_actions() -> None:
    requirements = pytest.importorskip("packaging.requirements")
    cfg = configparser.ConfigParser()
    cfg.read(SETUP_CFG)
    lines = [line.strip() for line in cfg["options.extras_require"]["atari"].splitlines()]
    ale = next(r for r in map(requirements.Requirement, filter(None, lines)) if r.name == "ale-py")
    assert not ale.specifier.contains("0.9.1"), ale
    assert ale.specifier.contains("0.10.0"), ale  # the first with continuous actions; tested on it
