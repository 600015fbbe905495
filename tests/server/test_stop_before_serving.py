"""A server told to stop (Ctrl-C) while its env is still being made exits without announcing
itself: it printed "worker ready ... http=http://127.0.0.1:0", a port it never listened on,
after being told to stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

GATED = "tests.providers.gated_start_env:OpenEnvTest/GatedStart-v0"


def test_ctrl_c_while_the_env_is_made_announces_nothing(tmp_path: Path) -> None:
    gate, entered = tmp_path / "gate", tmp_path / "entered"
    kwargs = {"env_id": GATED, "gate_file": str(gate), "entered_file": str(entered)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv_gym.server", "gym", "--http-port", "0", "--tcp-port", "0",
         "--env-kwargs", json.dumps(kwargs)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        deadline = time.monotonic() + 60
        while not entered.exists():  # the env's constructor runs
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)  # the stop is taken while the env is still being made
        gate.touch()
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "worker ready" not in out, out
