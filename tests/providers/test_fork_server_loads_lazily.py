"""The fork server loads what only untrusted envs' workers use (the helpers that run, confine
and reap their child processes: ``envs._exec``, ``envs._confine``) only once such a worker is
asked for: a trainer's first Echo, Gym or Atari worker does not wait for that import, and its
workers never load it. The server is still the subreaper of its workers' orphans
(``test_killed_worker_leaves_no_child.py``), and Coding/Git workers still confine and reap
theirs (``tests/security``)."""

from __future__ import annotations

import os
import uuid

import pytest

from openenv_gym.client.transport import BinaryClient
from openenv_gym.providers.process import ProcessProvider
from tests.providers.loaded_modules_env import ENV_ID

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="forking needs pidfds (Linux 5.3+)")

CHILD_HELPERS = "openenv_gym.envs._exec openenv_gym.envs._confine"


def _loaded_in_a_new_worker(provider: ProcessProvider) -> str:
    """Which of CHILD_HELPERS a newly forked (trusted) Gym worker has loaded."""
    [worker] = provider.start("gym", env_kwargs={"env_id": f"tests.providers.loaded_modules_env:{ENV_ID}",
                                                 "modules": CHILD_HELPERS})
    try:
        assert worker.proc.__class__.__name__ == "ForkedProcess"
        client = BinaryClient(worker.address, timeout=30)
        try:
            return client.request({"op": "reset", "seed": 0})["info"]["loaded"]
        finally:
            client.close()
    finally:
        provider.stop_all([worker])


def test_trusted_workers_of_a_new_fork_server_load_no_child_helpers(monkeypatch) -> None:
    # Workers with another environment come from a fork server of their own: a new one here.
    monkeypatch.setenv("OPENENV_GYM_TEST_FRESH_SERVER", uuid.uuid4().hex)
    provider = ProcessProvider()
    assert _loaded_in_a_new_worker(provider) == ""
    assert _loaded_in_a_new_worker(provider) == "", "nor do later ones"
    # A Coding worker has the server load them once for it and for every later worker.
    [coding] = provider.start("coding")
    try:
        client = BinaryClient(coding.address, timeout=30)
        try:
            sid = client.request({"op": "reset", "seed": 0})["sid"]
            reply = client.request({"op": "step", "sid": sid, "action": {"code": "print(6 * 7)"}})
            assert reply["obs"]["stdout"] == "42\n"
        finally:
            client.close()
    finally:
        provider.stop_all([coding])
    assert _loaded_in_a_new_worker(provider) == CHILD_HELPERS
