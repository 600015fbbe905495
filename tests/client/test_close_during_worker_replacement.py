"""``close()`` on another thread while ``reset()`` replaces a dead worker.

The reset's replacement used to run beside the close: close stopped the dead worker and
dropped it, the replacement then started a new one that nobody owned any more (it ran until
the trainer ended) and the reset failed on the dropped worker (an AttributeError or an
AssertionError). Now the close waits for the replacement and stops the new worker, and the
reset raises ``ClosedEnvironmentError``, or finished first and its env is closed after.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import gymnasium as gym
import pytest

from openenv_gym.client.env import RemoteEnv
from tests.security.helpers import wait_until, workers_of


def test_close_during_a_resets_worker_replacement_stops_the_new_worker() -> None:
    env = RemoteEnv("echo", provider="process")
    env.reset(seed=0)
    worker = env._worker
    os.kill(worker.pid, signal.SIGKILL)
    assert wait_until(lambda: not worker.alive(), 30)

    replacing = threading.Event()
    replace = worker.replace

    def replace_announced() -> None:  # the real replacement, announced to the closing thread
        replacing.set()
        time.sleep(1.0)  # room for the close to run first, were it not held back
        replace()

    worker.replace = replace_announced
    outcome: list[BaseException | None] = []

    def reset() -> None:
        try:
            env.reset(seed=1)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 (the test reads what it was)
            outcome.append(exc)

    resetting = threading.Thread(target=reset)
    resetting.start()
    assert replacing.wait(30), "the reset never replaced its dead worker"
    env.close()
    resetting.join(60)
    assert not resetting.is_alive()
    [raised] = outcome
    assert raised is None or isinstance(raised, gym.error.ClosedEnvironmentError), repr(raised)
    me = os.getpid()
    assert wait_until(lambda: not workers_of(me), 10), f"workers left running: {workers_of(me)}"
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.reset()
