"""`openenv-gym start ENV --name NAME`: a name `ps`/`stop`/`logs` cannot find the pool by is
refused by the parser (exit 2, ``argument --name``), before anything starts. ``--name ''``
took a random name without a word: the pool then ran under a name its user never saw."""

from __future__ import annotations

import glob
import os
import time

import pytest

from openenv_gym.cli import build_parser
from openenv_gym.cli.pools import valid_name
from tests.cli.cli_helpers import end, spawn

REFUSED = ["", " ", "   ", "\t", "\n", "Bad Name!", "Demo", " demo", "demo ", "a/b", "../x",
           ".hidden", "_x", "-x", "pool\n", "x" * 64, "naïve"]


@pytest.mark.parametrize("name", REFUSED)
def test_a_name_stop_and_logs_could_not_find_is_refused_by_the_parser(capsys, name: str) -> None:
    with pytest.raises(SystemExit) as exc:  # only parsed: nothing can start here
        build_parser().parse_args(["start", "echo", f"--name={name}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error: argument --name: " in err, err
    assert "leave --name out for a generated name" in err, err  # how to get one instead
    assert "lowercase letters, digits" in err, err  # and what a name may hold
    assert not valid_name(name)  # the rule the pool records follow (`stop`/`logs` find)


@pytest.mark.parametrize("name", ["", " ", "\t"])
def test_an_empty_name_is_called_empty(capsys, name: str) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["start", "echo", "--name", name])
    assert f"argument --name: must not be empty, got {name!r}" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["demo", "a", "0", "echo-1.x_y", "x" * 63])
def test_a_valid_name_is_kept_as_given(name: str) -> None:
    assert build_parser().parse_args(["start", "echo", "--name", name]).name == name
    assert valid_name(name)


def test_no_name_still_means_a_generated_one() -> None:
    assert build_parser().parse_args(["start", "echo"]).name is None


@pytest.mark.parametrize("name", ["", "  "])
def test_start_with_an_empty_name_exits_2_and_starts_no_pool(tmp_path, name: str) -> None:
    # Its own runtime folder (TMPDIR): any pool record it wrote is seen here, and no pool of
    # another test is touched.
    log = str(tmp_path / "start.log")
    proc = spawn("start", "echo", "--provider", "process", "--name", name, log=log,
                 env={"TMPDIR": str(tmp_path)})
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            with open(log, encoding="utf-8", errors="replace") as f:
                if "is running" in f.read():
                    break  # a pool started after all: stopped below (SIGTERM), then failed
            time.sleep(0.05)
    finally:
        code = end(proc)  # a `start` that was not refused stops its pool on SIGTERM
    with open(log, encoding="utf-8", errors="replace") as f:
        out = f.read()
    assert code == 2, out
    assert "error: argument --name: must not be empty" in out, out
    assert "leave --name out for a generated name" in out, out
    assert "Traceback" not in out, out
    records = glob.glob(os.path.join(str(tmp_path), "openenv-gym-*", "pools", "*.json"))
    assert records == [], records
