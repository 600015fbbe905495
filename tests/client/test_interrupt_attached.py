"""Ctrl-C (Jupyter's interrupt) on an env attached to a running server (``base_url=``).

An attached server outlives the env: nothing stops it on ``close()``, so what an interrupted
call leaves there (a session, a connection still busy with the interrupted request) must be
ended by the client itself. Real servers, real SIGINT.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.conftest import ServedEnv, ctrl_c_after, stop_process, worker_sessions

SLOW_STEP = {"code": "import time; time.sleep(30); print('slow')"}


@pytest.fixture
def served_coding():
    """A running Coding server, whose steps can be made slow (a ``time.sleep`` in the code)."""
    server = ServedEnv("coding")
    yield server
    server.stop()


def test_close_after_an_interrupted_slow_step_ends_the_session_without_waiting(served_coding: ServedEnv) -> None:
    # The interrupted step still runs on the server for 30 s. Were the session's close to
    # wait for it first (as an ordinary call does), it would give up after its 5 s and
    # leave the session on the server until it expired.
    env = gym.make("OpenEnv/Coding-v0", base_url=served_coding.http)
    u = env.unwrapped
    try:
        env.reset(seed=0)
        assert worker_sessions(served_coding.binary) == 1
        with pytest.raises(KeyboardInterrupt), ctrl_c_after(1.0, when=lambda: u._client._owed):
            env.step(SLOW_STEP)
    finally:
        env.close()
    assert worker_sessions(served_coding.binary) == 0


@pytest.mark.parametrize("then", ["close", "reset"])
def test_a_session_made_by_an_interrupted_first_reset_is_ended(served_echo: ServedEnv, then: str) -> None:
    # The server is stopped while the first reset is interrupted: it makes the session once
    # resumed, but its id never reached the env. close() (or the next reset, which makes a
    # session of its own) must end it, not leave it on the server until it expires.
    env = gym.make("OpenEnv/Echo-v0", base_url=served_echo.http)
    u = env.unwrapped
    try:
        stop_process(served_echo.proc.pid)
        try:
            with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.5, when=lambda: u._client._owed):
                env.reset(seed=0)
        finally:
            os.kill(served_echo.proc.pid, signal.SIGCONT)
        if then == "reset":
            env.reset(seed=1)
            assert worker_sessions(served_echo.binary) == 1
    finally:
        env.close()
    assert worker_sessions(served_echo.binary) == 0


def test_close_on_another_thread_ends_the_wait_for_an_interrupted_call(served_echo: ServedEnv) -> None:
    # The server is stopped while a step is interrupted: the next step waits for the server
    # to finish that one (up to its 120 s timeout). A close() on another thread must end
    # that wait, as it does for a worker the env started (stopping it ends the wait).
    env = gym.make("OpenEnv/Echo-v0", base_url=served_echo.http, timeout=120.0)
    u = env.unwrapped
    env.reset(seed=0)
    stop_process(served_echo.proc.pid)
    outcome: dict[str, Any] = {}

    def next_step() -> None:
        try:
            outcome["reply"] = env.step({"message": "next"})
        except BaseException as exc:  # noqa: BLE001 (what the step raised is the test's subject)
            outcome["error"] = exc

    try:
        # (request_unread cannot tell over TCP: the stopped server's kernel takes the bytes.)
        with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.5, when=lambda: u._client._owed):
            env.step({"message": "interrupted"})
        waiting = threading.Thread(target=next_step)
        waiting.start()
        while not _held_elsewhere(u._client.lock) and waiting.is_alive():
            waiting.join(0.01)  # until the next step waits (holding the client's lock)
        env.close()
        waiting.join(12.0)  # far past what the close takes, well short of the 120 s wait
        assert not waiting.is_alive(), "close() did not end the wait for the interrupted call"
    finally:
        os.kill(served_echo.proc.pid, signal.SIGCONT)
        env.close()
    assert isinstance(outcome.get("error"), gym.error.ClosedEnvironmentError), outcome


def _held_elsewhere(lock: Any) -> bool:
    """Whether another thread holds ``lock`` (an RLock, which has no ``locked()`` here)."""
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True


def test_close_on_another_thread_ends_a_reset_recovering_an_interrupted_first_reset(served_echo: ServedEnv) -> None:
    # The first reset is interrupted on a stopped server: the next reset first waits for it,
    # to end the session it made (up to the 120 s timeout). A close() on another thread ends
    # that wait too, and the reset says the env is closed, not that the worker failed.
    env = gym.make("OpenEnv/Echo-v0", base_url=served_echo.http, timeout=120.0)
    u = env.unwrapped
    stop_process(served_echo.proc.pid)
    outcome: dict[str, Any] = {}

    def next_reset() -> None:
        try:
            outcome["reply"] = env.reset(seed=1)
        except BaseException as exc:  # noqa: BLE001 (what the reset raised is the test's subject)
            outcome["error"] = exc

    try:
        with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.5, when=lambda: u._client._owed):
            env.reset(seed=0)
        assert u._session.unknown
        waiting = threading.Thread(target=next_reset)
        waiting.start()
        while not _held_elsewhere(u._client.lock) and waiting.is_alive():
            waiting.join(0.01)  # until the reset waits (holding the client's lock)
        env.close()
        waiting.join(12.0)
        assert not waiting.is_alive(), "close() did not end the reset's wait"
    finally:
        os.kill(served_echo.proc.pid, signal.SIGCONT)
        env.close()
    assert isinstance(outcome.get("error"), gym.error.ClosedEnvironmentError), outcome
