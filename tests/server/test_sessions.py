"""Sessions: the end of an episode, idle expiry around long calls, closing mid-call."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import pytest

from openenv_gym.errors import InvalidRequestError, ResetNeededError, SessionNotFoundError
from openenv_gym.server.sessions import SessionManager
from tests.server.live import PLAIN, WAIT, Gate, GateEnv


def test_a_step_before_reset_or_after_the_end_needs_a_reset() -> None:
    manager = SessionManager(lambda: GateEnv(Gate(), length=2), idle_timeout=None)
    try:
        session = manager.create()
        with pytest.raises(ResetNeededError, match="has not been reset") as raised:
            session.step(PLAIN)
        # What callers already catch, and what Gymnasium code catches.
        assert isinstance(raised.value, InvalidRequestError) and isinstance(raised.value, gym.error.ResetNeeded)
        session.reset()
        assert session.step(PLAIN)[2:4] == (False, False)
        assert session.step(PLAIN)[2:4] == (True, False)
        with pytest.raises(ResetNeededError, match="ended at step 2 .*call reset"):
            session.step(PLAIN)
        assert (session.step_count, session.episode_return, list(session.returns)) == (2, 2.0, [2.0])
        session.reset()
        assert session.step(PLAIN)[1] == 1.0
    finally:
        manager.close_all()


def test_idle_expiry_counts_from_the_end_of_a_call_and_spares_calls_in_flight() -> None:
    gate = Gate()
    manager = SessionManager(lambda: GateEnv(gate), idle_timeout=None)  # expired by hand below
    try:
        session = manager.create()
        session.reset()
        thread = threading.Thread(target=session.step, args=(WAIT,))
        thread.start()
        assert gate.wait_inside(1)
        manager.idle_timeout = 0.01
        time.sleep(0.05)  # the step has now lasted longer than the idle timeout
        assert manager.expire_idle() == 0 and manager.get(session.id) is session  # in flight
        session.last_used -= 1  # as if the step had started long ago
        opened = time.monotonic()
        gate.open()
        thread.join(30)
        assert session.last_used >= opened  # marked used when the step ended
    finally:
        gate.open()
        manager.close_all()


def test_close_during_a_call_returns_at_once_and_closes_the_env_after_it() -> None:
    gate = Gate()
    manager = SessionManager(lambda: GateEnv(gate), idle_timeout=None)
    try:
        session = manager.create()
        session.reset()
        results: list[object] = []
        thread = threading.Thread(target=lambda: results.append(session.step(WAIT)))
        thread.start()
        assert gate.wait_inside(1)
        waiting: list[BaseException] = []

        def queued_step() -> None:  # a second call, waiting behind the first
            try:
                session.step(PLAIN)
            except SessionNotFoundError as exc:
                waiting.append(exc)

        queued = threading.Thread(target=queued_step)
        queued.start()
        manager.close(session.id)  # returns although the step holds the env
        assert not session.env.closed.is_set() and len(manager) == 0
        gate.open()
        thread.join(30)
        queued.join(30)
        assert results and results[0][1] == 1.0  # the call in flight ended normally
        assert session.env.closed.wait(30)
        assert waiting and "was closed" in str(waiting[0])  # the queued one never ran
        assert session.step_count == 1
    finally:
        gate.open()
        manager.close_all()
