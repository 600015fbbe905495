"""`ps` keeps a pool's web URL and name whole, each on one line, in a terminal of any width, so
they can be clicked and copied (tests/cli/)."""

from __future__ import annotations

import argparse
import io
import os

import pytest
from rich.console import Console

from openenv_gym.cli import pools, ps


@pytest.mark.parametrize("width", [80, 60, 40])
def test_ps_does_not_wrap_the_web_url_or_the_pool_name(monkeypatch, width: int) -> None:
    url = "http://127.0.0.1:35571/web"
    record = pools.PoolRecord(name="echo-1a2b3c", env="echo", provider="docker",
                              owner_pid=os.getpid(), web=url,
                              workers=[{"index": 0, "address": "unix:///tmp/x.sock"}])
    monkeypatch.setattr(pools, "scan", lambda: ([record], []))
    out = io.StringIO()
    monkeypatch.setattr(ps, "console", Console(file=out, width=width, highlight=False))
    assert ps._ps(argparse.Namespace(json=False, workers=False)) == 0
    printed = out.getvalue()
    assert url in printed, printed
    assert "echo-1a2b3c" in printed, printed


@pytest.mark.parametrize("width", [80, 40])
def test_ps_of_a_pool_with_a_long_name_still_shows_every_column(monkeypatch, width: int) -> None:
    name = "a" * 63  # the longest name `start --name` takes
    record = pools.PoolRecord(name=name, env="echo", provider="process", owner_pid=os.getpid(),
                              workers=[{"index": 0, "address": "unix:///tmp/x.sock",
                                        "pid": os.getpid()}])
    monkeypatch.setattr(pools, "scan", lambda: ([record], []))
    out = io.StringIO()
    monkeypatch.setattr(ps, "console", Console(file=out, width=width, highlight=False))
    assert ps._ps(argparse.Namespace(json=False, workers=False)) == 0
    printed = out.getvalue()
    # Fitted to the width, the other columns were squeezed to nothing, headers and all.
    [row] = [line for line in printed.splitlines() if name in line]
    for value in ("echo", "process", "1/1 up", str(os.getpid())):
        assert value in row, printed
    for header in ("provider", "workers", "owner pid"):
        assert header in printed, printed


def test_ps_says_how_long_a_pool_has_run_in_days_and_hours(monkeypatch) -> None:
    record = pools.PoolRecord(name="old", env="echo", provider="process", owner_pid=os.getpid(),
                              workers=[{"index": 0, "address": "unix:///tmp/x.sock", "pid": os.getpid()}])
    record.started -= 3 * 86400 + 2 * 3600 + 5  # started three days and two hours ago
    monkeypatch.setattr(pools, "scan", lambda: ([record], []))
    out = io.StringIO()
    monkeypatch.setattr(ps, "console", Console(file=out, width=120, highlight=False))
    assert ps._ps(argparse.Namespace(json=False, workers=False)) == 0
    [row] = [line for line in out.getvalue().splitlines() if "old" in line]
    assert "3 d 2 h" in row, out.getvalue()
