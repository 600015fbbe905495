"""A worker that is alive but not serving in time (an env slow to make, e.g. FinRL-v0 on a
large file) gets an error that names the option giving it more time."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_gym.errors import WorkerError
from openenv_gym.providers.base import wait_ready


def test_not_ready_in_time_names_startup_timeout(tmp_path: Path) -> None:
    with pytest.raises(WorkerError, match=r"not ready after 0 s .*provider_options=\{'startup_timeout': 120\}"):
        wait_ready(f"unix://{tmp_path}/never.sock", 0.05, lambda: True, lambda: "(log tail)")
