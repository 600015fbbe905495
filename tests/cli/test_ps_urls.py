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
