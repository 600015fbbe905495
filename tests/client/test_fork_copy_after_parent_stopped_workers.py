"""A forked child's copy of an env whose parent then stopped the workers (closed its env, or
exited; or a worker died): the child may not start others (they would be the parent's), so
its every call must fail with a typed error that says so, never an IndexError out of the
vector env's empty slices, nor "the next reset() tries to start a fresh one" (it cannot). A reset
that could open the child's sessions on some workers only must not leave them there."""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.client.env import RemoteEnv
from openenv_gym.errors import WorkerError
from openenv_gym.vector import RemoteVectorEnv
from tests.conftest import worker_sessions
from tests.security.helpers import wait_until

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _child_after(parent: Callable[[], None], child: Callable[[], None],
                 child_first: Callable[[], object] = lambda: None) -> int:
    """Fork; the child runs ``child_first``, then the parent runs ``parent``, then the child
    runs ``child`` and ends with ``os._exit`` (as a multiprocessing child does). Returns the
    child's exit code (0: both of its parts passed)."""
    first_r, first_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child_first()
            os.write(first_w, b"x")
            os.read(go_r, 1)
            child()
            code = 0
        except BaseException:
            traceback.print_exc()  # the parent's report shows why (pytest captures the fd)
        finally:
            os._exit(code)
    os.close(first_w)  # so a child that failed early reads as an empty pipe, not a hang
    os.close(go_r)
    try:
        if os.read(first_r, 1):
            parent()
    finally:
        os.write(go_w, b"x")
        os.close(first_r)
        os.close(go_w)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _kill(worker: Any) -> None:
    """Kill ``worker`` under its owner, which learns of it only on its next call."""
    os.kill(worker.pid, signal.SIGKILL)
    assert wait_until(lambda: not worker.alive(), 30)


def _refusal(call: Callable[[], object]) -> str:
    """The message of the typed error ``call`` must raise."""
    with pytest.raises(WorkerError) as caught:
        call()
    return str(caught.value)


def _says_a_fork_cannot_replace(text: str) -> None:
    assert "forked child" in text and "fresh one" not in text, text


def test_a_single_envs_child_is_told_its_parent_stopped_the_worker(provider: str) -> None:
    env = RemoteEnv("gym", env_id="CartPole-v1", provider=provider)
    env.reset(seed=0)

    def child() -> None:
        for _ in range(2):  # and again, the same
            _says_a_fork_cannot_replace(_refusal(lambda: env.reset(seed=1)))

    assert _child_after(env.close, child) == 0


def test_a_single_envs_child_step_is_told_its_parents_worker_is_gone() -> None:
    env = RemoteEnv("gym", env_id="CartPole-v1", provider="process")
    try:
        env.reset(seed=0)
        # The child's own episode first, so its step reaches the (then dead) worker.
        assert _child_after(lambda: _kill(env._worker),
                            lambda: _says_a_fork_cannot_replace(_refusal(lambda: env.step(1))),
                            child_first=lambda: env.reset(seed=1)) == 0
        env.reset(seed=2)  # the owner replaces its dead worker and goes on
        env.step(0)
    finally:
        env.close()


def test_a_vector_envs_child_is_told_its_parent_stopped_the_workers(provider: str) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=3, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=2)
    envs.reset(seed=0)

    def child() -> None:
        texts = []
        for _ in range(2):  # was: an IndexError out of the empty slices the second time
            texts.append(_refusal(lambda: envs.reset(seed=1)))
            with pytest.raises(gym.error.ResetNeeded):
                envs.step(np.zeros(3, dtype=np.int64))
        for text in texts:
            _says_a_fork_cannot_replace(text)

    assert _child_after(envs.close, child) == 0


def test_a_vector_envs_child_leaves_no_session_where_its_reset_got_part_way() -> None:
    envs = RemoteVectorEnv(2, "gym", env_id="CartPole-v1", provider="process", envs_per_worker=1)
    try:
        envs.reset(seed=0)
        live, dead = envs.workers

        def child() -> None:
            text = _refusal(lambda: envs.reset(seed=1))
            # Measured while the child lives (its exit would end its sessions anyway): the
            # live worker holds the parent's session only, not also the child's.
            assert worker_sessions(live.address) == 1
            _says_a_fork_cannot_replace(text)

        assert _child_after(lambda: _kill(dead), child) == 0
        envs.reset(seed=2)  # the owner replaces its dead worker and goes on
        envs.step(np.zeros(2, dtype=np.int64))
    finally:
        envs.close()
