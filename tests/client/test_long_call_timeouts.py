"""Call timeouts past ``poll``'s range (about 24.8 days in milliseconds) work.

``call_timeout`` takes up to a year (and gives a year to an env that declares an endless
step), but every wait polled with the whole remaining time: ``poll`` refused it
("OverflowError: timeout is too large") and no call of such an env got through, nor the
wait for a call cut short by Ctrl-C.
"""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.spec import MAX_TIMEOUT
from tests.conftest import ctrl_c_after, request_unread, stop_process


def test_calls_with_a_year_long_timeout_get_their_replies() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process", timeout=MAX_TIMEOUT)
    u = env.unwrapped
    try:
        env.reset(seed=0)
        assert env.step({"message": "a"})[0]["echo"] == "a"
        # A step cut short by Ctrl-C while the worker cannot run it: the next call waits
        # for it first, under the same year-long deadline.
        stop_process(u._worker.pid)
        try:
            with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.05, when=lambda: request_unread(u._client)):
                env.step({"message": "interrupted"})
        finally:
            os.kill(u._worker.pid, signal.SIGCONT)
        assert env.step({"message": "b"})[0]["echo"] == "b"
    finally:
        env.close()
