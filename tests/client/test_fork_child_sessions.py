"""A forked child's copy of an env (a DataLoader worker, a multiprocessing 'fork' pool) starts
sessions of its own on the parent's workers. Such children often end with ``os._exit`` (as
multiprocessing's do) and never call ``close()``: their sessions (and a vector env's slices,
with their shared memory) must end with the child's connection, not stay on the parent's
workers for the rest of training, one set per child."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.client.env import RemoteEnv
from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import ResetNeededError, WorkerError
from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import in_forked_child, stop_process, worker_sessions

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _wait_for(address: str, count: int, timeout: float = 15.0) -> int:
    deadline = time.monotonic() + timeout
    while (now := worker_sessions(address)) != count and time.monotonic() < deadline:
        time.sleep(0.05)
    return now


@pytest.fixture
def echo() -> Iterator[tuple[RemoteEnv, str]]:
    """A parent's Echo env, reset, and its worker's address."""
    env = RemoteEnv("echo", provider="process")
    try:
        env.reset(seed=0)
        yield env, env._worker.address
    finally:
        env.close()


def _children_leave_only_the_parents(address: str, child: Callable[[], None], sessions: int,
                                     times: int = 1) -> None:
    """Run ``child`` in ``times`` forked children in turn; after each, the worker at
    ``address`` holds the parent's ``sessions`` only."""
    for _ in range(times):
        assert in_forked_child(child) == 0
        assert _wait_for(address, sessions) == sessions, "a child that exited left its sessions"


def test_a_single_envs_child_leaves_no_session_behind(echo: tuple[RemoteEnv, str]) -> None:
    env, address = echo

    def child() -> None:
        env.reset(seed=1)
        env.step({"message": "child"})
        assert worker_sessions(address) == 2  # the child's own session, beside the parent's

    _children_leave_only_the_parents(address, child, 1, times=3)
    assert env.step({"message": "parent"})[0]["echo"] == "parent"  # the parent's is intact


def test_a_vector_envs_child_leaves_no_slice_behind() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=2)
    try:
        envs.reset(seed=0)
        address = envs.workers[0].address

        def child() -> None:
            envs.reset(seed=1)
            envs.step(np.zeros(2, dtype=np.int64))
            assert worker_sessions(address) == 4

        _children_leave_only_the_parents(address, child, 2, times=3)
        envs.step(np.zeros(2, dtype=np.int64))  # the parent's slice is intact
    finally:
        envs.close()


def test_the_parents_sessions_outlive_a_dropped_connection() -> None:
    # Only a fork's sessions end with their connection: the owner's survive a reconnect
    # (a timeout or Ctrl-C drops the connection, and the episode goes on).
    env = RemoteEnv("echo", provider="process")
    try:
        env.reset(seed=0)
        env._client.drop()
        assert env.step({"message": "again"})[0]["echo"] == "again"
        assert worker_sessions(env._worker.address) == 1
    finally:
        env.close()


def _time_out_a_call(address: str, call: Callable[[], object]) -> None:
    """Make ``call`` time out with the worker hung (stopped), then let the worker go on: the
    timeout dropped the connection, and with it a fork's session or slice."""
    pid = BinaryClient(address, timeout=10).request({"op": "health"})["pid"]
    stop_process(pid)
    try:
        with pytest.raises(WorkerError):
            call()
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_childs_env_starts_over_with_reset_after_a_timeout(echo: tuple[RemoteEnv, str]) -> None:
    # The timeout dropped the child's connection, which ended its session: its reset starts
    # a new one (not the session being ended) and its steps go on; a child replaces no worker.
    env, address = echo

    def child() -> None:
        env.reset(seed=1)
        env._client.timeout = 1.0
        _time_out_a_call(address, lambda: env.step({"message": "lost"}))
        env._client.timeout = 30.0
        with pytest.raises(ResetNeededError, match="connection"):
            env.step({"message": "no session"})
        env.reset(seed=2)
        assert env.step({"message": "again"})[0]["echo"] == "again"
        assert _wait_for(address, 2) == 2  # the parent's and the child's new one

    _children_leave_only_the_parents(address, child, 1)
    assert env.step({"message": "parent"})[0]["echo"] == "parent"


def test_a_childs_vector_env_starts_over_with_reset_after_a_timeout() -> None:
    envs = RemoteVectorEnv(4, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=2,
                           step_timeout=1.0)
    try:
        envs.reset(seed=0)
        address = envs.workers[0].address

        def child() -> None:
            envs.reset(seed=1)
            _time_out_a_call(address, lambda: envs.step(np.zeros(4, dtype=np.int64)))
            with pytest.raises(ResetNeededError, match="connection"):
                envs.step(np.zeros(4, dtype=np.int64))
            envs.reset(seed=2)  # new slices; the healthy worker's old one is ended
            envs.step(np.zeros(4, dtype=np.int64))
            assert _wait_for(address, 4) == 4
            assert _wait_for(envs.workers[1].address, 4) == 4

        _children_leave_only_the_parents(address, child, 2)
        assert _wait_for(envs.workers[1].address, 2) == 2
        envs.step(np.zeros(4, dtype=np.int64))  # the parent's slices are intact
    finally:
        envs.close()
