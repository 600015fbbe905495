"""A pool record edited by hand (a field of the wrong type) must not break `ps`, `logs` or
`stop` for every pool with a traceback: it is skipped as not a record, and the others list."""

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


BAD = [{"owner_pid": "abc"}, {"owner_pid": None}, {"started": "yesterday"}, {"workers": None},
       {"workers": [{"address": "unix:///nowhere"}]},
       {"workers": [{"index": 0, "address": "unix:///nowhere", "pid": "abc"}]}]


@pytest.mark.parametrize("patch", BAD, ids=[next(iter(p)) + str(i) for i, p in enumerate(BAD)])
def test_a_malformed_record_is_skipped_and_the_others_listed(own_tmp, capsys, patch) -> None:
    me = os.getpid()  # a live owner, so the good record lists
    good = {"name": "good", "env": "echo", "provider": "process", "owner_pid": me,
            "workers": [], "web": None, "started": 2.0, "owner_start": process_start(me)}
    folder = pools.pools_dir()
    with open(os.path.join(folder, "good.json"), "w") as f:
        json.dump(good, f)
    with open(os.path.join(folder, "bad.json"), "w") as f:
        json.dump({**good, "name": "bad", "started": 1.0, **patch}, f)

    assert [r.name for r in pools.load_all()] == ["good"]
    assert main(["ps", "-w"]) == 0
    assert "good" in capsys.readouterr().out
    assert main(["logs", "bad"]) == 1  # no running pool of that name: an error, no traceback
    assert "no running pool named 'bad'" in capsys.readouterr().err
