"""Ctrl-C (Jupyter's interrupt) during ``gym.make`` on the process provider leaves nothing
running or on disk in the notebook's process, which lives on: no cgroup folder of a worker
that never started, no fork server that never served.

Where a real SIGINT cannot be aimed at the spot, the step it lands in raises
KeyboardInterrupt instead, as Ctrl-C would there (see test_process.py's fan-out tests).
"""

from __future__ import annotations

import os

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers import _cgroup, _tmpfs
from tests.conftest import ctrl_c_after
from tests.security.helpers import fork_servers_of, owned_cgroups, wait_until

CGROUPS, WHY_NOT = _cgroup.support()
needs_cgroups = pytest.mark.skipif(not CGROUPS, reason=f"no cgroups for workers here: {WHY_NOT}")


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@needs_cgroups
def test_ctrl_c_after_the_cgroup_is_made_removes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The private tmpfs is checked right after the worker's cgroup is made, the first time
    # in a subprocess (tens of milliseconds): an interrupt there left the cgroup's folders
    # until the process exited.
    before = set(owned_cgroups(os.getpid()))
    monkeypatch.setattr(_tmpfs, "spec_for_env", _interrupt)
    with pytest.raises(KeyboardInterrupt):
        gym.make("OpenEnv/Coding-v0", provider="process")
    assert set(owned_cgroups(os.getpid())) - before == set()


@needs_cgroups
def test_ctrl_c_while_the_cgroup_is_made_removes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    before = set(owned_cgroups(os.getpid()))
    monkeypatch.setattr(_cgroup.WorkerCgroup, "_write", _interrupt)  # setting its limits
    with pytest.raises(KeyboardInterrupt):
        gym.make("OpenEnv/Coding-v0", provider="process")
    assert set(owned_cgroups(os.getpid())) - before == set()


def test_ctrl_c_while_the_fork_server_starts_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # A notebook keeps the last traceback (and so the socket to the server that never said
    # hello): the server ran on beside the next one started, until the next error.
    monkeypatch.setenv("OPENENV_GYM_TEST_FORK_SERVER", "interrupted")  # a server of its own
    me = os.getpid()
    before = fork_servers_of(me)
    seen: list[bool] = []

    def importing() -> bool:
        # A few polls (10 ms each) after it runs: past Popen, into the wait for its hello
        # (its imports take a tenth of a second or more).
        seen.extend([True] if fork_servers_of(me) - before else [])
        return len(seen) >= 3

    with pytest.raises(KeyboardInterrupt) as kept, ctrl_c_after(0.0, when=importing):
        gym.make("OpenEnv/Echo-v0", provider="process")
    assert kept.value is not None  # held, as a notebook holds it
    assert wait_until(lambda: not fork_servers_of(me) - before, 10), "the interrupted fork server runs on"
    with gym.make("OpenEnv/Echo-v0", provider="process") as env:  # a new one serves
        env.reset(seed=0)
        assert env.step({"message": "ok"})[0]["echo"] == "ok"
    assert len(fork_servers_of(me) - before) == 1
