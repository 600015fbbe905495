"""Coding-v0 says when the kernel's OOM killer ended the code at the sandbox's memory limit.

The child is the OOM killer's first choice (``oom_score_adj`` 1000) when the worker's memory
cgroup (as root on the process provider; the container on the docker one) reaches its limit.
It exits with SIGKILL, as one killed at its deadline does, and stderr was empty: ``exit_code
-9`` and nothing else, which an agent cannot tell from a crash. Now stderr ends with a note
naming the limit, only when the cgroup's OOM kill count rose for that child: a timeout keeps
its own report (``timed_out``), and a SIGKILL the code sent itself gets no note.

The memory bomb stays under ``memory_mb`` (the address-space rlimit, which would raise
``MemoryError`` instead) and over a small ``mem_limit`` (160 MiB), so it is killed within
a fraction of a second of allocating.
"""

from __future__ import annotations

import os

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers._cgroup import support

#: Touches 16 MiB at a time until the cgroup's limit stops it.
_BOMB = """
hoard = []
while True:
    chunk = bytearray(16 << 20)
    for i in range(0, len(chunk), 4096):
        chunk[i] = 1
    hoard.append(chunk)
"""
_NOTE = "[killed: out of memory at the sandbox's memory limit (160 MiB)]"
_KWARGS = {"memory_mb": 2048, "step_timeout": 60.0,
           "provider_options": {"container_options": {"mem_limit": "160m"}}}


def _skip_without_a_memory_cgroup(provider: str) -> None:
    if provider == "process" and (os.geteuid() != 0 or not support()[0]):
        pytest.skip(f"the process provider's worker gets a memory cgroup as root only: {support()[1]}")


def test_an_oom_kill_is_named_and_a_timeout_or_own_sigkill_is_not(provider: str) -> None:
    _skip_without_a_memory_cgroup(provider)
    env = gym.make("OpenEnv/Coding-v0", provider=provider, **_KWARGS)
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step({"code": _BOMB})
        assert obs["exit_code"] == -9 and not obs["timed_out"] and reward == 0.0
        assert obs["stderr"].endswith(_NOTE + "\n"), obs["stderr"][-500:]

        # The OOM kill above is counted in the cgroup: later SIGKILLs must not inherit it.
        obs, *_ = env.step({"code": "import time; time.sleep(30)", "timeout": 1.0})
        assert obs["timed_out"] and obs["exit_code"] == -9 and "out of memory" not in obs["stderr"]
        obs, *_ = env.step({"code": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"})
        assert obs["exit_code"] == -9 and not obs["timed_out"] and obs["stderr"] == ""
    finally:
        env.close()


def test_an_oom_kill_in_a_persistent_cell_is_named(provider: str) -> None:
    _skip_without_a_memory_cgroup(provider)
    env = gym.make("OpenEnv/Coding-v0", provider=provider, persistent=True, **_KWARGS)
    try:
        env.reset(seed=0)
        obs, *_ = env.step({"code": "x = 1"})
        assert obs["exit_code"] == 0, obs["stderr"]
        obs, *_ = env.step({"code": _BOMB})
        assert obs["exit_code"] == -9 and not obs["timed_out"]
        assert obs["stderr"].endswith(_NOTE + "\n"), obs["stderr"][-500:]
    finally:
        env.close()
