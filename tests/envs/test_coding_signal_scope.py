"""Coding-v0: a child cannot signal any thread of its worker, the one that started it included.

Landlock scopes signals by the domain of the *target thread*, and a child starts in the domain
of the worker thread that confined itself to start children (``_confine._spawner``): with
``tgkill(worker, that_thread, SIGKILL)`` a completion killed the worker, and every session it
hosted with it (``kill(worker)`` targets the main thread, which is refused).
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



@pytest.mark.parametrize("mode", [{}, {"persistent": True}])
def test_a_child_cannot_signal_the_thread_that_started_it(provider: str, mode: dict) -> None:
    env = gym.make("OpenEnv/Coding-v0", provider=provider, **mode)
    try:
        env.reset(seed=0)
        obs, *_ = env.step({"code": SIGNAL_EVERY_THREAD})
        assert obs["stdout"] == "reached=0\n", obs["stdout"] + obs["stderr"]
        obs, reward, *_ = env.step({"code": "print('still here')"})
        assert obs["stdout"] == "still here\n" and reward == 1.0
    finally:
        env.close()


def test_the_children_of_one_step_still_signal_each_other() -> None:
    # Each child's Landlock domain is its own and its descendants': its process tree stays its own.
    env = gym.make("OpenEnv/Coding-v0", provider="process")
    try:
        env.reset(seed=0)
        code = ("import os, signal, time\npid = os.fork()\nif pid == 0:\n    time.sleep(30)\n    os._exit(0)\n"
                "os.kill(pid, signal.SIGKILL)\nprint(os.waitpid(pid, 0)[1] & 0x7f)\n")
        obs, *_ = env.step({"code": code})
        assert obs["stdout"] == "9\n", obs["stderr"]
    finally:
        env.close()
