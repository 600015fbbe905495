"""Ctrl-C (Jupyter's interrupt) mid-call, then the next call: the worker runs the two in order.

A call cut short while the worker is busy (a step that waits behind another, a worker the
machine has not scheduled yet) leaves its request on the way. The next call reconnects; had
it gone out at once, the worker could run it before the interrupted one, and the env would
then move on from a state that call's reply never showed (a step after the interrupted step
undone behind the trainer's back). Real workers, real SIGINT.
"""

from __future__ import annotations

import os
import signal
import time

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.conftest import ctrl_c_after, request_unread, stop_process

ROUNDS = 80


def test_the_step_after_an_interrupted_step_runs_after_it_in_the_worker() -> None:
    # The worker is stopped (busy elsewhere) when the interrupt lands: the interrupted step
    # and the next both wait for it, and the next must run second. Without the ordering it
    # ran first in about one round in ten.
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_steps=4 * ROUNDS)
    u = env.unwrapped
    try:
        env.reset(seed=0)
        for i in range(ROUNDS):
            stop_process(u._worker.pid)
            try:
                with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.05, when=lambda: request_unread(u._client)):
                    env.step({"message": f"interrupted {i}"})
            finally:
                os.kill(u._worker.pid, signal.SIGCONT)
            assert env.step({"message": f"next {i}"})[0]["echo"] == f"next {i}"
            time.sleep(0.05)  # what would run late has run by now
            state = u.state()
            assert state["last_message"] == f"next {i}", f"round {i}: the interrupted step ran last"
            assert state["step_count"] == 2 * (i + 1)  # the interrupted step did run, once
    finally:
        env.close()
