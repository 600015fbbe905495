"""The GRPO example's --problems is checked when parsed: a typo is a usage error (exit 2 with
a message), never an empty dataset that "trains" 0 steps and exits 0."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo_coding.py"


def _example():
    spec = importlib.util.spec_from_file_location("trl_grpo_coding_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("spec, expected", [("0-3", [0, 1, 2, 3]), ("2,5,7", [2, 5, 7]),
                                            ("0-1,163", [0, 1, 163])])
def test_problems_parse(spec: str, expected: list[int]) -> None:
    assert _example().parse_args(["--tiny", "--problems", spec]).problems == expected


def test_default_problems_are_0_to_15() -> None:
    assert _example().parse_args(["--tiny"]).problems == list(range(16))


@pytest.mark.parametrize("spec", ["5-2", "abc", "", "-3", "0-164", "200"])
def test_bad_problems_are_usage_errors(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _example().parse_args(["--tiny", "--problems", spec])
    assert exit_info.value.code == 2
    assert "--problems" in capsys.readouterr().err
