"""close() of a vector env from another thread while a step is in flight (as a single env's)."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401


def test_close_from_another_thread_ends_a_vector_step_in_flight(provider: str) -> None:
    # Two workers: the step waits on both; a slow step keeps it in flight while close() runs.
    envs = gym.make_vec("OpenEnv/Coding-v0", num_envs=2, provider=provider, step_timeout=20)
    envs.reset()
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            envs.step({"code": ("import time; time.sleep(15)",) * 2})
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(1.5)
    envs.close()
    thread.join(60)
    assert not thread.is_alive()
    # was: IndexError (the pool emptied its slices under the reading thread), and on docker
    # only after step_timeout (its sockets' descriptors were closed under its poll, and the
    # Docker client's next connection took their numbers)
    assert isinstance(outcome[0], gym.error.ClosedEnvironmentError), repr(outcome[0])
    with pytest.raises(gym.error.ClosedEnvironmentError):
        envs.step({"code": ("pass",) * 2})
