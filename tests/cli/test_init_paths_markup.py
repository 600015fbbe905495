"""``init`` prints the paths it wrote as they are, whatever characters they hold."""

from __future__ import annotations

from tests.cli.cli_helpers import run


def test_paths_with_brackets_print_as_they_are(tmp_path) -> None:
    # Rich read "[lab]" in --dir as a markup tag and dropped it from the printed paths.
    out = run("init", "bracket_probe", "--dir", str(tmp_path / "[lab]"))
    assert out.returncode == 0, out.stderr
    assert f"in {tmp_path}/[lab]/bracket_probe:" in out.stdout
    assert f"cd '{tmp_path}/[lab]/bracket_probe' && " in out.stdout
