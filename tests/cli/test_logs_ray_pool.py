"""``openenv-gym logs`` of a Ray pool says where its workers' output is, not "(no output yet)".

A Ray worker's server writes to a pipe its Ray actor reads (``RayWorker.logs()`` asks the
actor); the pool's record names no log file, no cluster and no actor, so the command said
"(no output yet)" for a worker that had printed plenty. No Ray is needed: the record is what
``openenv-gym start --provider ray`` writes.
"""

from __future__ import annotations

import os
import uuid

from openenv_gym.cli import pools
from openenv_gym.cli.start import worker_record
from tests.cli.cli_helpers import run


class _RayLikeWorker:
    """What ``worker_record`` reads of a :class:`~openenv_gym.providers.ray.RayWorker`."""

    address = "tcp://127.0.0.1:9"
    pid = 12345
    container_id = None
    restarts = 0


def test_logs_of_a_ray_worker_say_its_actor_keeps_them() -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    record = pools.PoolRecord(name=name, env="echo", provider="ray", owner_pid=os.getpid(),
                              workers=[worker_record(0, _RayLikeWorker())])
    assert pools.claim(record)
    try:
        out = run("logs", name)
        assert out.returncode == 0, out.stderr
        assert "(no output yet)" not in out.stdout
        text = " ".join(out.stdout.split())  # rich may wrap on a narrow terminal
        assert "a Ray worker keeps no log file" in text
        assert "worker.logs()" in text and f"pid {os.getpid()}" in text
        assert "--provider process or docker" in text
    finally:
        pools.remove(record)
