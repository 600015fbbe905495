"""The process provider's own lifecycle (its isolation: test_cgroup.py, test_tmpfs.py)."""

from __future__ import annotations

import os

import pytest

from openenv_gym.errors import WorkerError
from openenv_gym.providers.process import ProcessProvider
from tests.providers.conftest import descendants, wait_gone


def test_a_worker_that_does_not_serve_in_time_is_ended_not_left_running() -> None:
    before = descendants(os.getpid())
    with pytest.raises(WorkerError):
        ProcessProvider(startup_timeout=0.05).start("echo")  # far less than a Python start
    started = descendants(os.getpid()) - before
    assert not wait_gone(started, 10), "the worker that timed out at start still runs"
