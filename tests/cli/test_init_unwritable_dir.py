"""`openenv-gym init` where the project cannot go: a typed error naming the fix, no traceback;
and "next:" lines a shell can run when --dir has a space."""

from __future__ import annotations

import subprocess

import pytest

from tests.cli.cli_helpers import run


def test_a_dir_that_is_a_file_gets_an_error_not_a_traceback(tmp_path) -> None:
    (tmp_path / "afile").write_text("")
    out = run("init", "qa_file_dir", "--dir", str(tmp_path / "afile"))
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert "error: cannot write the project to" in out.stderr and "Not a directory" in out.stderr
    assert "fix: choose a --dir" in out.stderr


@pytest.mark.parametrize("force", [False, True])
def test_a_file_where_the_project_goes_is_named_and_force_is_not_offered(tmp_path, force) -> None:
    (tmp_path / "qa_file_here").write_text("mine")
    out = run("init", "qa_file_here", "--dir", str(tmp_path), *(["--force"] if force else []))
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert "qa_file_here exists and is not a folder" in out.stderr, out.stderr
    assert "--force" not in out.stderr  # overwriting project files would not help
    assert (tmp_path / "qa_file_here").read_text() == "mine"


def test_the_next_cd_line_runs_in_a_shell_when_the_dir_has_a_space(tmp_path) -> None:
    dest = tmp_path / "my envs"
    out = run("init", "qa_spaced", "--dir", str(dest))
    assert out.returncode == 0, out.stderr
    line = next(s for s in out.stdout.splitlines() if s.strip().startswith("cd "))
    cd = line.split(" && ")[0].strip()
    shell = subprocess.run(["bash", "-c", f"{cd} && pwd"], capture_output=True, text=True, timeout=30)
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.strip() == str(dest / "qa_spaced")
