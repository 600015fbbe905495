"""A long-running pool (``openenv-gym start``) closes sessions that the trainers attached to it
left behind: one killed without ``close()`` must not hold its session (and a slot of the
worker's session limit) for the pool's whole life."""

from __future__ import annotations

import time
import uuid

from tests.cli.cli_helpers import end, run, run_json, spawn, wait_for
from tests.conftest import worker_sessions
from tests.providers.test_idle_timeout import _left_session, _until


def test_start_pool_closes_sessions_left_by_dead_trainers(tmp_path) -> None:
    name, log = f"t-{uuid.uuid4().hex[:8]}", str(tmp_path / "start.log")
    proc = spawn("start", "echo", "-n", "1", "--provider", "process", "--name", name,
                 "--idle-timeout", "1", log=log, env={"COLUMNS": "80"})
    try:
        wait_for(rf"pool {name} is running", log, proc, timeout=180)
        [record] = [r for r in run_json("ps", "--json") if r["name"] == name]
        address = record["workers"][0]["address"]
        for _ in range(3):
            _left_session(address)
        assert _until(lambda: worker_sessions(address) == 0), "sessions of dead trainers stay"
        assert run("stop", name).returncode == 0
    finally:
        end(proc)
