"""``nohup openenv-gym serve ENV &`` keeps serving when its terminal closes (SIGHUP), as any
program started under nohup does (tests/cli/)."""

from __future__ import annotations

import signal
import subprocess
import urllib.request

from tests.cli.cli_helpers import CLI, ENV, end, wait_for


def _sighup_ignored(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
    return bool(mask & (1 << (signal.SIGHUP - 1)))


def test_serve_under_nohup_keeps_serving_after_sighup(tmp_path) -> None:
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        # What nohup does before it runs the command: SIGHUP ignored.
        proc = subprocess.Popen([*CLI, "serve", "echo", "--port", "0"], stdout=out,
                                stderr=subprocess.STDOUT, env=ENV,
                                preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        url = wait_for(r"http=(http://127\.0\.0\.1:\d+)", str(log), proc).group(1)
        # The supervisor had put a handler in its place that stopped the server on SIGHUP.
        assert _sighup_ignored(proc.pid)
        proc.send_signal(signal.SIGHUP)  # the terminal closed
        with urllib.request.urlopen(f"{url}/health", timeout=30) as reply:
            assert reply.status == 200
        assert proc.poll() is None
    finally:
        assert end(proc) == 0  # SIGTERM still stops it, as ever
