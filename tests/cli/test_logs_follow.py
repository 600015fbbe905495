"""``openenv-gym logs NAME -f`` prints a pool's worker logs as they grow, as ``docker logs -f``
does, until the pool stops (tests/cli/)."""

from __future__ import annotations

import os
import uuid

from openenv_gym.cli import pools
from tests.cli.cli_helpers import end, run, run_json, spawn, wait_for


def test_logs_follow_prints_new_lines_until_the_pool_stops(tmp_path) -> None:
    name, log, followed = f"t-{uuid.uuid4().hex[:8]}", str(tmp_path / "start.log"), \
        str(tmp_path / "follow.log")
    proc = spawn("start", "echo", "-n", "2", "--provider", "process", "--name", name, log=log)
    follow = None
    try:
        wait_for(rf"pool {name} is running", log, proc, timeout=180)
        [record] = [r for r in run_json("ps", "--json") if r["name"] == name]
        w0, w1 = (w["log"] for w in record["workers"])
        with open(w0, "a") as f:
            f.write("written before\n")
        follow = spawn("logs", name, "-f", "--tail", "1", log=followed)
        wait_for(r"w0 \| written before\n", followed, follow)  # the tail first
        for path, marker in ((w0, "zero-after"), (w1, "one-after")):
            with open(path, "a") as f:  # the file the worker appends its output to
                f.write(marker + "\n")
        wait_for(r"w0 \| zero-after\n", followed, follow)
        wait_for(r"w1 \| one-after\n", followed, follow)
        assert run("stop", name).returncode == 0
        assert follow.wait(60) == 0  # the pool is gone: nothing more to follow
    finally:
        if follow is not None:
            end(follow)
        end(proc)


def test_a_follower_reads_whole_lines_and_survives_truncation_and_replacement(tmp_path) -> None:
    log = tmp_path / "w0.log"
    log.write_bytes(b"old 1\nold 2\n")
    follower = pools.LogFollower(str(log), tail=1)
    try:
        assert follower.read() == ["old 2"]
        with open(log, "ab") as f:
            f.write(b"new 1\nhalf")
        assert follower.read() == ["new 1"]  # "half" waits for its newline
        with open(log, "ab") as f:
            f.write(b" done\n")
        assert follower.read() == ["half done"]
        log.write_bytes(b"after truncation\n")
        assert follower.read() == ["after truncation"]
        os.unlink(log)  # a worker restarted after its log was removed writes a new one
        log.write_bytes(b"in the new file\n")
        assert follower.read() == ["in the new file"]
        with open(log, "ab") as f:
            f.write(b"unfinished")
        assert follower.read(final=True) == ["unfinished"]
    finally:
        follower.close()
