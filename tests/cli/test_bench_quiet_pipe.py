"""``bench`` with stderr on a pipe or in a file: its progress bar writes nothing there."""

from __future__ import annotations

from tests.cli.cli_helpers import run


def test_bench_writes_nothing_to_a_piped_stderr_when_it_succeeds() -> None:
    # The transient progress bar left an empty line in stderr (a CI log, `2> bench.err`).
    out = run("bench", "echo", "--provider", "process", "--steps", "20", "--warmup", "0")
    assert out.returncode == 0, out.stderr
    assert "env-steps/s" in out.stdout
    assert out.stderr == ""
