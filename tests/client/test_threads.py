"""One RemoteEnv used from several threads: calls take turns, and close() from another
thread ends a call in flight (any call: reset, step, call, get_wrapper_attr, state) instead of
failing itself."""

from __future__ import annotations

import os
import signal
import threading
import time

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.conftest import stop_process


def test_two_threads_stepping_one_env_each_get_their_own_reply() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_steps=10**6)
    env.reset(seed=0)
    wrong: list[tuple[str, str]] = []

    def steps(tag: str) -> None:
        for k in range(300):
            obs, *_ = env.step({"message": f"{tag}{k}"})
            if obs["echo"] != f"{tag}{k}":
                wrong.append((f"{tag}{k}", obs["echo"]))

    try:
        threads = [threading.Thread(target=steps, args=(tag,)) for tag in "AB"]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not wrong, wrong[:5]  # was: most replies went to the other thread
    finally:
        env.close()


_CALLS = {
    "step": lambda env: env.step({"message": "hi"}),
    "call": lambda env: env.unwrapped.call("state"),
    "get_wrapper_attr": lambda env: env.unwrapped.get_wrapper_attr("no_such_client_attribute"),
    "state": lambda env: env.unwrapped.state(),
}


@pytest.mark.parametrize("how", list(_CALLS))
def test_close_from_another_thread_ends_a_call_in_flight(how: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process")
    env.reset(seed=0)
    worker = env.unwrapped.worker
    # The call in flight hangs until something ends it. Every thread must be stopped, not just
    # the main one (/proc/PID/status): a connection thread still running would answer the call.
    stop_process(worker.pid)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            _CALLS[how](env)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.5)
    try:
        env.close()  # was: RuntimeError("concurrent poll() invocation"), the worker left running
    finally:
        os.kill(worker.pid, signal.SIGCONT) if worker.alive() else None
    thread.join(30)
    assert not thread.is_alive()
    # was, for the served calls: WorkerCrashedError ("closed the connection mid-call")
    assert isinstance(outcome[0], gym.error.ClosedEnvironmentError), repr(outcome[0])
    assert not worker.alive() and env.unwrapped.worker is None
    with pytest.raises(gym.error.ClosedEnvironmentError):
        env.step({"message": "again"})
