"""Ctrl-Z on `openenv-gym serve` stops the server with its supervisor, and `fg` continues both.

The server has a process group of its own (cli/_supervise.py), so the terminal's SIGTSTP and
the shell's SIGCONT, sent to the job's group, reached the supervisor only: the server served
on while the shell said the job was stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from typing import Any, Callable

import pytest

from tests.cli.cli_helpers import CLI, ENV, end, wait_for


def _state(pid: int) -> str:
    """The process's state letter in /proc (``T``: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _waiting(pid: int) -> bool:
    """Whether the process is blocked in waitpid(): the supervisor's loop, its signal
    handlers in place."""
    with open(f"/proc/{pid}/wchan") as f:
        return f.read() == "do_wait"


def _until(condition: Callable[[], bool], what: str, within: float = 60) -> None:
    deadline = time.monotonic() + within  # a hang guard, not a timing assertion
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def job(tmp_path: Any) -> Any:
    """`serve echo` started as a shell starts a job: in a process group of its own."""
    log = str(tmp_path / "serve.log")
    with open(log, "wb") as f:
        proc = subprocess.Popen([*CLI, "serve", "echo", "--port", "0"], stdout=f,
                                stderr=subprocess.STDOUT, env=ENV, process_group=0)
    try:
        http = wait_for(r"http=(http://127\.0\.0\.1:\d+)", log, proc).group(1)
        yield proc, http, log
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGCONT)  # a stopped job takes no SIGTERM until continued
        end(proc)


def test_ctrl_z_stops_the_server_and_fg_continues_it(job) -> None:
    proc, http, log = job
    with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        [server] = [int(pid) for pid in f.read().split()]
    _until(lambda: _waiting(proc.pid), "the supervisor never waited for its server")

    os.killpg(proc.pid, signal.SIGTSTP)  # what the terminal sends the foreground job on Ctrl-Z
    _until(lambda: _state(proc.pid) == "T", "the supervisor did not stop")
    _until(lambda: _state(server) == "T", "the server served on while its job was stopped")

    os.killpg(proc.pid, signal.SIGCONT)  # what `fg` sends the job
    _until(lambda: _state(server) != "T" and _state(proc.pid) != "T", "the job was not continued")
    with urllib.request.urlopen(f"{http}/health", timeout=60) as reply:
        assert json.load(reply)
    proc.terminate()
    assert proc.wait(60) == 0
    with open(log, encoding="utf-8", errors="replace") as f:
        assert "Traceback" not in f.read()
