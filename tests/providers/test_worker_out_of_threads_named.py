"""A worker that cannot start a thread at startup (its process budget used up) is a typed
error naming the limit and the fix, not "worker exited during startup" and a traceback.

Many workers on one machine run into the trainer's cgroup or the user's process limit; a
worker's own ``pids_limit`` below what its server needs is the same failure, made on demand.
"""

from __future__ import annotations

import os

import gymnasium as gym
import pytest

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _cgroup
from tests.security.helpers import owned_cgroups, owned_runtime_entries, wait_until, workers_of

pytestmark = pytest.mark.timeout(120)


def test_worker_without_room_for_a_thread_names_the_process_limit() -> None:
    ok, reason = _cgroup.support()
    if os.geteuid() != 0 or not ok:
        pytest.skip(f"the process provider gives workers no pids cgroup here ({reason})")
    with pytest.raises(ProviderUnavailableError) as raised:
        gym.make("OpenEnv/Coding-v0", provider="process",
                 provider_options={"container_options": {"pids_limit": 2}})
    message = str(raised.value)
    assert "can't start new thread" in message
    assert "allows 2 processes and threads" in message and "pids_limit" in message
    assert "fewer workers" in message
    me = os.getpid()
    assert wait_until(lambda: not workers_of(me) and not owned_cgroups(me)
                      and not owned_runtime_entries(me), 10)
