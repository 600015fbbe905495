"""A command whose stdout pipe is closed (``openenv-gym doctor | head -1``) ends quietly with
141, as a shell reports ``seq 1 1000000 | head -1``: not 1, doctor's "the core does not work"
(tests/cli/)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request

import pytest

from tests.cli.cli_helpers import CLI, ENV, end


@pytest.mark.parametrize("args", [["doctor"], ["list"]], ids=" ".join)
def test_closed_stdout_pipe_exits_141_quietly(args: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes its first line
    try:
        out = subprocess.run([*CLI, *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
                             env=ENV, timeout=300)
    finally:
        os.close(write_end)
    assert out.returncode == 141, out.stderr
    assert out.stderr == ""


def test_serve_whose_output_nobody_reads_serves_on_quietly(tmp_path) -> None:
    # was: the ready line met the closed pipe in a thread, whose traceback went to stderr.
    with socket.socket() as s:  # a port free now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    read_end, write_end = os.pipe()
    os.close(read_end)  # `openenv-gym serve echo | true`
    err = tmp_path / "stderr"
    with open(err, "w") as f:
        proc = subprocess.Popen([*CLI, "serve", "echo", "--port", str(port)], stdout=write_end,
                                stderr=f, env=ENV)
    os.close(write_end)
    try:
        deadline = time.monotonic() + 120  # a hang guard, not a timing assertion
        while True:
            assert proc.poll() is None, err.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
                    # Set by the thread that prints the ready line, just before it prints.
                    if json.load(reply)["http"]:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as reply:
            assert json.load(reply)["status"] == "ok"  # serving on
    finally:
        assert end(proc) == 0
    assert "Traceback" not in err.read_text(), err.read_text()
