"""A running pool whose record went (a tmp cleaner, an edit by hand) writes it again, so ps,
logs and stop still find it and no second `start` takes its name; a worker log that went is
named, not shown as "(no output yet)"."""

from __future__ import annotations

import json
import os
import time
import uuid

from openenv_gym.cli import pools
from tests.cli.cli_helpers import end, run, run_json, spawn, wait_for


def test_a_lost_record_is_written_again_and_stop_finds_the_pool(tmp_path) -> None:
    name, log = f"t-{uuid.uuid4().hex[:8]}", str(tmp_path / "start.log")
    proc = spawn("start", "echo", "-n", "1", "--provider", "process", "--name", name, log=log)
    try:
        wait_for(rf"pool {name} is running", log, proc, timeout=180)
        [record] = [r for r in run_json("ps", "--json") if r["name"] == name]
        path = os.path.join(pools.pools_dir(), f"{name}.json")
        os.unlink(path)  # was: ps "no pools running", and `start --name` took the name again
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(path, encoding="utf-8") as f:
            assert json.load(f)["owner_pid"] == record["owner_pid"]
        assert run("start", "echo", "--name", name).returncode == 2  # the name is still taken
        wait_for("was gone; written again", log, proc)
        assert run("stop", name).returncode == 0
        assert proc.wait(60) == 0
    finally:
        end(proc)


def test_a_worker_log_that_went_is_named(tmp_path) -> None:
    record = pools.PoolRecord(name="t", env="echo", provider="process", owner_pid=os.getpid(),
                              workers=[{"index": 0, "address": "unix:///x",
                                        "log": str(tmp_path / "w0.log")}])
    [text] = pools.worker_logs(record).values()
    assert f"its log file {tmp_path / 'w0.log'} is gone" in text
