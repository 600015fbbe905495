"""``openenv-gym logs --tail N`` reads a worker's log back from its end, so a log that grew for
a pool's whole life is not read into memory to show its last lines (tests/cli/)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: Reads the tail of a sparse log far larger than the memory it is allowed (the address space
#: limit is set after the imports, so only what worker_logs allocates counts against it).
_READ_UNDER_LIMIT = textwrap.dedent("""
    import os, resource, sys
    from openenv_gym.cli import pools

    with open("/proc/self/status") as f:
        size = next(int(l.split()[1]) << 10 for l in f if l.startswith("VmSize:"))
    headroom = 256 << 20
    resource.setrlimit(resource.RLIMIT_AS, (size + headroom, size + headroom))
    record = pools.PoolRecord(name="t", env="echo", provider="process", owner_pid=os.getpid(),
                              workers=[{"index": 0, "address": "unix:///x", "log": sys.argv[1]}])
    print(repr(pools.worker_logs(record, tail=2)[0]))
""")


def test_the_tail_of_a_log_larger_than_memory_is_read_from_its_end(tmp_path) -> None:
    log = tmp_path / "w0.log"
    with open(log, "wb") as f:
        f.truncate(2 << 30)  # sparse: 2 GiB of log that takes no disk
        f.seek(0, 2)
        f.write(b"first\nsecond\nthird\n")
    out = subprocess.run([sys.executable, "-c", _READ_UNDER_LIMIT, str(log)], capture_output=True,
                         text=True, timeout=120)
    # Read whole, the log needed 2 GiB more than allowed: MemoryError.
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == repr("second\nthird")


def test_the_tail_keeps_lines_across_read_blocks(tmp_path) -> None:
    from openenv_gym.cli import pools

    lines = [f"line {i} " + "x" * (i % 300) for i in range(5000)]  # spans many 64 KiB blocks
    log = tmp_path / "w0.log"
    log.write_text("\n".join(lines) + "\n")
    record = pools.PoolRecord(name="t", env="echo", provider="process", owner_pid=1,
                              workers=[{"index": 0, "address": "unix:///x", "log": str(log)}])
    for tail in (1, 7, 400, 4999, 5000, 6000):
        assert pools.worker_logs(record, tail=tail)[0] == "\n".join(lines[-tail:])
