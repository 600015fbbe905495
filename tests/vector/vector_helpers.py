"""Helpers for the vector tests: a reference SyncVectorEnv, deep comparison, killing workers,
a refused batch."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from openenv_gym.errors import InvalidActionError
from tests.conftest import stop_process

MAX_STEPS = 12


def local_sync(n: int, mode: gym.vector.AutoresetMode, max_steps: int = MAX_STEPS) -> gym.vector.SyncVectorEnv:
    """Gymnasium's own SyncVectorEnv over local CartPole with short episodes."""
    return gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1", max_episode_steps=max_steps)] * n, autoreset_mode=mode)


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Deep equality of step results (arrays, dicts, object arrays, scalars)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: keys {a.keys()} != {b.keys()}"
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), f"{where}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
        assert np.asarray(a).dtype == np.asarray(b).dtype, f"{where}: {np.asarray(a).dtype} != {np.asarray(b).dtype}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def kill_worker(worker: Any) -> None:
    """SIGKILL a process worker, ``docker kill`` a container worker."""
    container_id = getattr(worker, "container_id", None)
    if container_id:
        subprocess.run(["docker", "kill", container_id], check=True, capture_output=True, timeout=30)
    else:
        os.kill(worker.pid, signal.SIGKILL)


def freeze_worker(worker: Any) -> None:
    """Make a worker hang without dying (SIGSTOP / ``docker pause``)."""
    container_id = getattr(worker, "container_id", None)
    if container_id:
        subprocess.run(["docker", "pause", container_id], check=True, capture_output=True, timeout=30)
    else:
        stop_process(worker.pid)


def step_both(remote: Any, local: gym.vector.VectorEnv, actions: np.ndarray, where: str) -> tuple[Any, Any]:
    """Step the remote and the reference vector env alike and assert the same results; with
    ``DISABLED`` autoreset, first reset (and compare) the envs whose episodes ended.

    Returns:
        The remote's and the reference's step results.
    """
    if local.metadata["autoreset_mode"] is gym.vector.AutoresetMode.DISABLED:
        done = local._terminations | local._truncations
        if done.any():
            assert_same(remote.reset(options={"reset_mask": done.copy()}),
                        local.reset(options={"reset_mask": done.copy()}), f"{where} reset")
    got, want = remote.step(actions), local.step(actions)
    assert_same(got, want, where)
    return got, want


def refused_and_no_env_stepped(envs: Any, actions: Any, match: str) -> None:
    """``envs.step(actions)`` raises an ``InvalidActionError`` matching ``match``, and every
    env's ``state()`` (array-valued: Pendulum's) is as it was: no env stepped."""
    before = envs.call("state")
    with pytest.raises(InvalidActionError, match=match):
        envs.step(actions)
    for b, a in zip(before, envs.call("state")):
        np.testing.assert_array_equal(a, b)
