"""An EnvPool episode cut by ``step_timeout`` (the cap on one request) says so: it was reported
as "episode exceeded episode_timeout=120.0s", sending the user to raise the wrong limit."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

pytest.importorskip("trl")

from openenv_gym.trl import EnvPool  # noqa: E402
from tests.vector.vector_helpers import freeze_worker  # noqa: E402


def test_a_request_past_step_timeout_names_step_timeout() -> None:
    with EnvPool("echo", num_workers=1, provider="process", step_timeout=2,
                 episode_timeout=120) as pool:
        [episode] = pool.open(1)
        assert episode.reset().failure is None
        frozen = pool.workers[0].pid
        freeze_worker(pool.workers[0])
        try:
            out = episode.step({"message": "hi"})
        finally:  # a stopped worker cannot notice its owner leave: end it if the pool did not
            with contextlib.suppress(ProcessLookupError):
                os.kill(frozen, signal.SIGKILL)
        assert out.failure == "timeout"
        assert "step_timeout=2.0s" in out.message and "episode_timeout" not in out.message, out.message
