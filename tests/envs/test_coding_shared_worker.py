"""Coding-v0 sessions sharing one worker (``envs_per_worker=2``): one session's code must not end
the worker, nor leave state the other sessions (or later episodes) can read.

- Memory: the worker and its children share the cgroup's limit (1 GiB, as root), and the OOM
  killer takes the largest process. Code that spread its memory over processes each smaller
  than the worker (~40 MB) had the worker killed, and its neighbour's step with it.
- Kernel keys: a key a child added to its uid's keyring outlived the worker, and the next
  session's child read it (Docker's seccomp profile refuses these calls; ours did not).
"""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)

_MANY_SMALL_HOGS = """
import os, time
for i in range(60):
    if os.fork() == 0:
        b = bytearray(24 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        time.sleep(20)
        os._exit(0)
time.sleep(6)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the worker gets a cgroup with a memory limit as root")
def test_memory_spread_over_small_processes_does_not_end_the_shared_worker() -> None:
    envs = gym.make_vec("OpenEnv/Coding-v0", num_envs=2, provider="process", envs_per_worker=2,
                        env_kwargs={"step_timeout": 10.0})
    try:
        envs.reset(seed=0)
        _, rewards, _, truncated, infos = envs.step({"code": [_MANY_SMALL_HOGS, "print('ok')"]})
        assert "worker_restarted" not in infos, infos["worker_error"]
        assert rewards[1] == 1.0 and not np.any(truncated)
    finally:
        envs.close()


_ADD_KEY = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
key = libc.syscall(248, b"user", b"openenv-gym-test", b"x", 1, -4)  # add_key(..., @u)
print(key < 0 and os.strerror(ctypes.get_errno()))
if key > 0:
    libc.syscall(250, 21, key)  # KEYCTL_INVALIDATE: leave the machine as it was
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the add_key syscall number is x86-64's")
def test_a_child_cannot_add_a_kernel_key() -> None:
    env = gym.make("OpenEnv/Coding-v0", provider="process")
    try:
        env.reset(seed=0)
        obs, *_ = env.step({"code": _ADD_KEY})
        assert obs["stdout"] == "Operation not permitted\n", obs["stdout"] + obs["stderr"]
    finally:
        env.close()
