"""EnvPool.close() from another thread while a leased episode steps: the episode's failure
(its worker stopped under it) must not start a replacement worker that nothing stops; and
calls on a closed pool say it is closed."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Callable

import gymnasium as gym
import pytest

from openenv_gym.trl import EnvPool, EpisodeJob
from openenv_gym.trl.outcome import EpisodeOutcome
from tests.providers.ignore_term_env import ENV_ID as IGNORE_TERM


def _wait_for(check: Callable[[], bool]) -> bool:
    """Poll ``check()`` for up to 30 s (a bounded wait, not a timing assertion)."""
    ticker = threading.Event()
    for _ in range(3000):
        if check():
            return True
        ticker.wait(0.01)
    return False


def test_close_from_another_thread_leaves_no_worker_behind_a_failing_episode(tmp_path: Path) -> None:
    # Both workers hang and ignore SIGTERM (a deadlocked env): close() then waits out each
    # one's grace, the idle worker's keeping it busy while the stepping episode fails.
    noted = tmp_path / "sigterms"
    pool = EnvPool("gym", num_workers=2, provider="process", step_timeout=60,
                   env_id=f"tests.providers.ignore_term_env:{IGNORE_TERM}", noted=str(noted))
    stepped, idle = pool.workers
    [episode, _] = pool.open(2)  # round-robin: the first is on worker 0
    assert episode.worker == 0
    closer = threading.Thread(target=pool.close, daemon=True)
    try:
        episode.reset(seed=0)
        stepped_pid = stepped.pid
        outcome: list[EpisodeOutcome | BaseException] = []

        def run() -> None:
            try:
                outcome.append(episode.step(1))  # hangs
            except BaseException as exc:  # noqa: BLE001
                outcome.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        closer.start()
        # Once close() is stopping the stepping worker, it dies under the step in flight.
        assert _wait_for(lambda: noted.exists() and str(stepped_pid) in noted.read_text().split())
        os.kill(stepped_pid, signal.SIGKILL)
        thread.join(60)
        closer.join(60)
        assert not thread.is_alive() and not closer.is_alive()
        assert isinstance(outcome[0], EpisodeOutcome) and outcome[0].failure == "crash", outcome
        # was: the failed step replaced its worker while close() stopped the pool, and the
        # fresh worker process kept running after close() returned
        assert not stepped.alive() and not idle.alive()
    finally:
        closer.join(60)
        for worker in (stepped, idle):
            if worker.alive():
                worker.stop()


def test_calls_on_a_closed_pool_say_it_is_closed() -> None:
    pool = EnvPool("echo", num_workers=1, provider="process")
    [episode] = pool.open(1)
    episode.reset(seed=0)
    pool.close()
    # was: ZeroDivisionError (open), RuntimeError "cannot schedule new futures" (run) and
    # IndexError (a leased episode's step), none naming the closed pool
    calls = {
        "open": lambda: pool.open(1),
        "run": lambda: pool.run([EpisodeJob([{"message": "hi"}])]),
        "step_many": lambda: pool.step_many([episode], [{"message": "hi"}]),
        "episode.step": lambda: episode.step({"message": "hi"}),
    }
    for name, call in calls.items():
        with pytest.raises(gym.error.ClosedEnvironmentError, match="EnvPool .* is closed"):
            call()
    episode.close()  # closing stays safe, as does closing the pool again
    pool.close()


def _running(command: str) -> bool:
    """Whether a process of this machine runs ``command`` (its full command line)."""
    for entry in Path("/proc").iterdir():
        try:
            if (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip() == command.encode():
                return True
        except OSError:
            continue
    return False


def test_close_stops_a_step_in_flight_instead_of_waiting_for_it_to_end() -> None:
    # Git lets a command run this long; Ctrl-C out of `with EnvPool(...)` runs close().
    command = "sleep 873"
    pool = EnvPool("git", num_workers=1, provider="process", task="create-branch", episode_timeout=900,
                   env_kwargs={"step_timeout": 900, "max_timeout": 900})
    [worker] = pool.workers
    outcomes: list[object] = []
    runner = threading.Thread(target=lambda: outcomes.append(pool.run([EpisodeJob([{"command": command}])])),
                              daemon=True)
    closer = threading.Thread(target=pool.close, daemon=True)
    try:
        runner.start()
        assert _wait_for(lambda: _running(command))
        closer.start()
        closer.join(60)  # a hang guard: the command alone would hold it for 873 s
        # was: close() waited for the episode's step, so the command ran to its end first
        assert not closer.is_alive()
        runner.join(60)
        [[outcome]] = outcomes
        assert outcome.failure == "crash"
        assert not worker.alive() and not _running(command)
    finally:
        if worker.alive():
            worker.stop()  # ends the command a close() still waiting waits for
        if closer.ident:
            closer.join(60)
        else:
            pool.close()
