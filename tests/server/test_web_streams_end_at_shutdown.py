"""A served env stops on SIGTERM while a page holds ``/web/events`` open: the stream ends at
once, as under ``openenv-gym start --web``. uvicorn waits for every open response before it
exits, and the stream ended only at its lifetime's end (``serve`` took ~4 s to stop)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import httpx

# The stream's lifetime made endless: only the shutdown can end it, so an exit at all shows it.
SERVER = """
import sys
import openenv_gym.server.web as web
web.STREAM_LIFETIME = float("inf")
from openenv_gym.server.main import main
main(sys.argv[1:])
"""


def test_sigterm_ends_an_open_web_events_stream_and_the_server_exits() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, "echo", "--http-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = proc.stdout.readline()
        url = re.search(r"http=(\S+)", line)
        assert url, line + proc.stdout.read()
        with httpx.Client(timeout=60) as client:
            with client.stream("GET", f"{url.group(1)}/web/events") as events:
                lines = events.iter_lines()
                while not next(lines).startswith("data:"):  # the stream runs
                    pass
                proc.send_signal(signal.SIGTERM)
                # The stream still open: the server exits only if it ends the stream itself.
                out, _ = proc.communicate(timeout=60)  # a bound against a hang, not a measure
                rest = list(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out
    assert not any(line.startswith("data:") for line in rest), rest
