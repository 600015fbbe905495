"""A single env whose worker died says its next reset() *tries* to start a fresh one: the start
may fail. When the reset's replacement fails to start (every try), the reset's error says so
and that the next reset() tries again, a step until then names that failure instead of
promising a fresh worker, and a reset once starts succeed again runs on a fresh worker. The
same holds for a hung worker (its call timed out): the step that would say "call reset(), which
replaces the worker" names the failed start instead."""

from __future__ import annotations

from pathlib import Path

import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import EnvServerError, ResetNeededError, WorkerError, WorkerTimeoutError
from openenv_gym.providers.base import RESTART_ATTEMPTS
from tests.providers.flaky_start_env import single_env
from tests.vector.vector_helpers import freeze_worker, kill_worker


def test_a_failed_replacement_is_named_and_a_later_reset_starts_the_worker(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    env = single_env(failures)
    try:
        env.reset(seed=0)
        kill_worker(env.unwrapped.worker)
        with pytest.raises(WorkerError) as died:
            env.step(0)
        assert "the next reset() tries to start a fresh one" in str(died.value), died.value

        failures.write_text(str(RESTART_ATTEMPTS))  # every start of the replacement fails
        with pytest.raises(EnvServerError, match="this start fails on purpose") as failed:
            env.reset(seed=1)
        assert failures.read_text() == "0"  # every start was tried
        # The log tail quoted is the last start's, not parts of every attempt's.
        assert str(failed.value).count("openenv-gym worker failed:") == 1, failed.value
        assert (f"starting a replacement worker failed {RESTART_ATTEMPTS} times: the next reset() "
                "tries to start one again") in str(failed.value), failed.value

        with pytest.raises(WorkerError) as stepped:
            env.step(0)
        text = str(stepped.value)
        assert "the last reset() could not start a fresh one" in text, text
        assert "this start fails on purpose" in text and "the next reset() tries again" in text, text

        _, info = env.reset(seed=1)  # starts succeed again
        assert info.get("worker_restarted")
        assert env.step(0)[1] == 1.0
        # A fresh worker: a later death promises a fresh one again, not the old failure.
        kill_worker(env.unwrapped.worker)
        with pytest.raises(WorkerError) as again:
            env.step(0)
        assert "could not start" not in str(again.value), again.value
    finally:
        env.close()


def test_a_failed_replacement_of_a_hung_worker_is_named_by_the_next_step(tmp_path: Path) -> None:
    failures = tmp_path / "failures"
    env = single_env(failures, timeout=2)
    try:
        env.reset(seed=0)
        freeze_worker(env.unwrapped.worker)  # hung, not dead: the call times out
        with pytest.raises(WorkerTimeoutError, match="call reset"):
            env.step(0)

        failures.write_text(str(RESTART_ATTEMPTS))  # every start of the replacement fails
        with pytest.raises(EnvServerError, match="this start fails on purpose"):
            env.reset(seed=1)

        with pytest.raises(ResetNeededError) as stepped:
            env.step(0)
        text = str(stepped.value)
        assert text.startswith("the last call timed out"), text
        assert "the last reset() could not start a fresh one" in text, text
        assert "this start fails on purpose" in text and "the next reset() tries again" in text, text

        _, info = env.reset(seed=1)  # starts succeed again
        assert info.get("worker_restarted")
        assert env.step(0)[1] == 1.0
    finally:
        env.close()
