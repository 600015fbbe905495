"""``stop`` of a pool whose ``start`` is stopped (Ctrl-Z, SIGSTOP) says so and how to resume
it, instead of "their owners may be stuck"."""

from __future__ import annotations

import os
import signal
import uuid

from tests.cli.cli_helpers import end, run, spawn, wait_for


def test_stop_names_a_frozen_owner_and_kill_cont(tmp_path) -> None:
    name, log = f"t-{uuid.uuid4().hex[:8]}", str(tmp_path / "start.log")
    proc = spawn("start", "echo", "-n", "1", "--provider", "process", "--name", name, log=log)
    try:
        wait_for(rf"pool {name} is running", log, proc, timeout=180)
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            out = run("stop", name, "--timeout", "1")
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert out.returncode == 1
        assert "is stopped" in out.stderr and f"kill -CONT {proc.pid}" in out.stderr, out.stderr
        assert proc.wait(60) == 0  # the SIGTERM sent took effect once it was continued
    finally:
        end(proc)
