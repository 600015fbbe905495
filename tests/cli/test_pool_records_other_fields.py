"""Pool record fields that d21d172's _parse left unchecked: `env` (a `ps` table cell), a
worker's `container` and `log` (`ps -w`, `logs`), `web`, and an `owner_pid` that `stop`
would signal as a group (0) or as every process (-1). Such a record is skipped as not one."""

from __future__ import annotations

import json
import os
import tempfile

import pytest

from openenv_gym.cli import main, pools
from openenv_gym.cli.pools import process_start


@pytest.fixture()
def own_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


W = {"index": 0, "address": "unix:///nowhere"}
BAD = [{"env": 5}, {"provider": ["process"]}, {"web": 123},
       {"workers": [{**W, "container": 7}]}, {"workers": [{**W, "log": 7}]},
       {"workers": [{**W, "pid": -3}]}, {"owner_pid": -1}, {"owner_pid": 0}]


@pytest.mark.parametrize("patch", BAD, ids=[f"{k}{i}" for i, p in enumerate(BAD) for k in p])
def test_a_record_with_such_a_field_is_skipped(own_tmp, capsys, patch) -> None:
    me = os.getpid()
    good = {"name": "good", "env": "echo", "provider": "process", "owner_pid": me,
            "workers": [W], "web": None, "started": 2.0, "owner_start": process_start(me)}
    folder = pools.pools_dir()
    with open(os.path.join(folder, "good.json"), "w") as f:
        json.dump(good, f)
    with open(os.path.join(folder, "bad.json"), "w") as f:
        json.dump({**good, "name": "bad", "started": 1.0, **patch}, f)

    assert [r.name for r in pools.load_all()] == ["good"]  # -1 and 0 were "alive" (kill(pid, 0))
    assert main(["ps"]) == 0
    assert main(["ps", "-w"]) == 0
    assert "good" in capsys.readouterr().out
    assert main(["logs", "bad"]) == 1
    assert "no running pool named 'bad'" in capsys.readouterr().err
