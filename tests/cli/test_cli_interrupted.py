"""A Ctrl-C while the CLI loads its commands exits 130 without a traceback, as one during a
command does (tests/cli/)."""

from __future__ import annotations

import pytest

import openenv_gym.cli as cli


def test_ctrl_c_while_the_commands_import_exits_130(monkeypatch, capsys) -> None:
    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    try:
        code = cli.main(["list"])
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main() (a traceback for the user)")
    assert code == 130
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
