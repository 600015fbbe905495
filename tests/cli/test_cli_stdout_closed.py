"""A command whose stdout pipe is closed (``openenv-gym doctor | head -1``) ends quietly with
141, as a shell reports ``seq 1 1000000 | head -1``: not 1, doctor's "the core does not work"
(tests/cli/)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.cli.cli_helpers import CLI, ENV


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
