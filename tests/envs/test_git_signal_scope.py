"""Git-v0: an agent's command cannot signal any thread of its worker.

Landlock scopes signals by the domain of the *target thread*, and a child starts in the domain
of the worker thread that started it. A long-lived confined thread started every command, so a
command could ``tgkill(worker, that_thread, SIGKILL)`` and end the worker, and every session
it hosted. Commands (and the git backends that run programs of the agent's config) now start
from a thread that has ended before they run (``Ruleset.spawn_alone`` and a gate).
"""

from __future__ import annotations

import os

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._confine import abi as landlock_abi

from tests.conftest import SIGNAL_EVERY_THREAD

pytestmark = [
    pytest.mark.skipif(landlock_abi() < 6, reason="Landlock scopes signals from ABI 6 (Linux 6.12)"),
    pytest.mark.skipif(os.uname().machine != "x86_64", reason="the tgkill syscall number is x86-64's"),
]

# $PPID is the worker (the command's shell is its child).
_SIGNAL_EVERY_THREAD = f'W=$PPID python3 -c "{SIGNAL_EVERY_THREAD}"'


def test_a_command_cannot_signal_the_worker(provider: str) -> None:
    env = gym.make("OpenEnv/Git-v0", provider=provider)
    try:
        env.reset(seed=0)
        obs, *_ = env.step({"command": _SIGNAL_EVERY_THREAD})
        assert obs["output"].strip() == "reached=0", obs["output"]
        obs, _, _, _, info = env.step({"command": "echo alive"})
        assert obs["output"] == "alive\n" and "worker_restarted" not in info
    finally:
        env.close()


def test_a_command_still_signals_its_own_processes() -> None:
    env = gym.make("OpenEnv/Git-v0", provider="process")
    try:
        env.reset(seed=0)
        obs, *_ = env.step({"command": "sleep 30 & kill -9 $!; wait $!; echo $?"})
        assert obs["output"].endswith("137\n"), obs["output"]  # killed by its SIGKILL
    finally:
        env.close()
