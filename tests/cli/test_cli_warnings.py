"""Warnings reach the command's user as ``warning: ...`` lines, not in Python's format."""

from __future__ import annotations

from tests.cli.cli_helpers import run


def test_untrusted_env_falling_back_to_process_warns_in_one_plain_line(tmp_path) -> None:
    # No Docker engine: provider auto runs Coding on process and warns that it is not
    # isolated. Python's format named cli/__init__.py's line and printed its source.
    out = run("bench", "coding", "--provider", "auto", "--steps", "1", "--warmup", "0",
              env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert out.returncode == 0, out.stderr
    assert "warning: this env runs untrusted code" in out.stderr
    assert "RuntimeWarning" not in out.stderr and ".py:" not in out.stderr
    assert "args.handler" not in out.stderr
