"""The GRPO example runs end to end on the tiny model with Coding workers in Docker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo_coding.py"


@pytest.mark.docker
@pytest.mark.timeout(420)
def test_example_tiny_run_on_docker(tmp_path: Path) -> None:
    require_docker()
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--tiny", "--max-steps", "2", "--workers", "2",
                           "--provider", "docker", "--problems", "0-3",
                           "--output-dir", str(tmp_path / "grpo-coding")],  # not in the checkout
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "provider='docker'" in proc.stdout
    steps = re.findall(r"step (\d+): mean reward ([0-9.]+)", proc.stdout)
    assert [s for s, _ in steps] == ["1", "2"] and all(0.0 <= float(r) <= 1.0 for _, r in steps)
    assert "episodes 8," in proc.stdout  # 2 steps x 4 completions, each executed in a container


@pytest.mark.timeout(420)
def test_example_tools_mode_runs_trls_agent_loop(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--tiny", "--tools", "--max-steps", "2",
                           "--workers", "2", "--provider", "process", "--problems", "0-3",
                           "--output-dir", str(tmp_path / "grpo-coding")],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = re.findall(r"step (\d+): mean reward ([0-9.]+) .*tool calls per rollout ([0-9.]+)", proc.stdout)
    assert [s for s, _, _ in steps] == ["1", "2"], proc.stdout[-2000:]
    # One episode per rollout: 2 steps x 4 completions (TRL's probe env at start-up never resets).
    assert "episodes 8," in proc.stdout and "provider process" in proc.stdout
