"""A worker that dies in a step and whose replacement fails to start (``on_worker_error=
"restart"``) raises from the step once the other envs stepped: their results (an episode that
just ended) are not returned. The next step must ask for a reset naming the failed restart,
not step on as if nothing were missing (it stepped an ended env, or missed its autoreset, and
the fresh worker's envs reported no restart); ``reset()`` starts the worker again. With
``autoreset_mode=SAME_STEP``, a replacement that starts but whose env's first reset raises is
refused the same way, named as the failed reset it is, not as a failed restart."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import OpenEnvError, ResetNeededError, WorkerError
from openenv_gym.providers.base import RESTART_ATTEMPTS
from tests.providers.flaky_start_env import GYM_ID, RESET_ENV_ID
from tests.vector.vector_helpers import kill_worker

ACTIONS = np.zeros(2, dtype=np.int64)


def _vector(failures: Path, mode: str):
    """Two envs on a worker each; episodes end at their second step (a time limit)."""
    failures.write_text("0")
    return gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=GYM_ID, failures_file=str(failures),
                        provider="process", envs_per_worker=1, max_episode_steps=2,
                        autoreset_mode=mode)


def _fresh_episodes_everywhere(envs) -> None:
    """Two full steps, the time limit ending both envs' episodes at the second."""
    for ends in ([False, False], [True, True]):
        _, rewards, terminated, truncated, _ = envs.step(ACTIONS)
        assert rewards.tolist() == [1.0, 1.0] and truncated.tolist() == ends and not terminated.any()


def _fail_restart_in_step(envs, failures: Path) -> None:
    """Step once, then kill worker 1 in the step that ends env 0's episode, with every start
    of its replacement failing."""
    envs.reset(seed=0)
    envs.step(ACTIONS)
    failures.write_text(str(RESTART_ATTEMPTS))
    kill_worker(envs.unwrapped.workers[1])
    with pytest.raises(WorkerError, match=r"(?s)restarting it failed too.*next reset\(\) tries to start the worker again"):
        envs.step(ACTIONS)  # env 0's episode ended here, unreturned
    assert failures.read_text() == "0"  # every start was tried


@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_a_failed_restart_asks_for_a_reset_which_starts_the_worker_again(tmp_path: Path, mode: str) -> None:
    failures = tmp_path / "failures"
    envs = _vector(failures, mode)
    try:
        _fail_restart_in_step(envs, failures)
        named = r"raised WorkerError \(restarting a failed worker failed\).*call reset\(\)"
        with pytest.raises(ResetNeededError, match=named):
            envs.step(ACTIONS)
        # A reset whose restart fails again says so, and the env still waits for a reset.
        failures.write_text(str(RESTART_ATTEMPTS))
        with pytest.raises(WorkerError, match="restarting it failed too"):
            envs.reset(seed=1)
        with pytest.raises(ResetNeededError, match=r"restarting failed worker 1 \(envs 1\.\.1\) failed"):
            envs.step(ACTIONS)
        _, infos = envs.reset(seed=1)
        assert infos["worker_restarted"].tolist() == [False, True]
        _fresh_episodes_everywhere(envs)
    finally:
        envs.close()


def _same_step_vector_replacing_worker_1(tmp_path: Path, reset_failures: int):
    """A SAME_STEP vector env reset with ``seed=0`` whose worker 1 is killed, the first
    ``reset_failures`` resets of its replacement's env failing (the next step replaces it)."""
    tmp_path.mkdir(exist_ok=True)
    starts, resets = tmp_path / "starts", tmp_path / "resets"
    starts.write_text("0")
    resets.write_text("0")
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=f"tests.providers.flaky_start_env:{RESET_ENV_ID}",
                        failures_file=str(starts), reset_failures_file=str(resets), provider="process",
                        envs_per_worker=1, max_episode_steps=2, autoreset_mode="same_step")
    try:
        envs.reset(seed=0)
        resets.write_text(str(reset_failures))
        kill_worker(envs.unwrapped.workers[1])
    except BaseException:
        envs.close()
        raise
    return envs, resets


def _fail_the_replacements_reset_in_step(envs, resets: Path) -> None:
    """Step once, in a step that ends no episode (env 0 is not reset, which would take the
    failure): the replacement starts, and its env's first reset raises."""
    with pytest.raises(OpenEnvError, match="env 1: RuntimeError: this reset fails on purpose"):
        envs.step(ACTIONS)
    assert resets.read_text() == "0" and envs.unwrapped.workers[1].alive()


def test_a_same_step_reset_failing_on_a_started_replacement_is_named_as_the_reset(tmp_path: Path) -> None:
    envs, resets = _same_step_vector_replacing_worker_1(tmp_path, reset_failures=1)
    try:
        _fail_the_replacements_reset_in_step(envs, resets)
        with pytest.raises(ResetNeededError) as refused:
            envs.step(ACTIONS)
        text = str(refused.value)
        assert "restarting a failed worker failed" not in text, text
        assert re.search(r"replacement started, but the first reset of its envs failed: env 1: RuntimeError: "
                         r"this reset fails on purpose.*call reset\(\): it resets them again", text), text
        # reset() tries that reset again, and reports the restart the failed step could not.
        _, infos = envs.reset(seed=1)
        assert infos["worker_restarted"].tolist() == [False, True]
        _fresh_episodes_everywhere(envs)
    finally:
        envs.close()


def test_a_same_step_reset_failing_on_a_started_replacement_keeps_its_seed_for_the_reset(tmp_path: Path) -> None:
    # Unfailed, the step's reset seeds the restarted env from its last seed (reproducible).
    envs, _ = _same_step_vector_replacing_worker_1(tmp_path / "unfailed", reset_failures=0)
    try:
        envs.step(ACTIONS)
        unfailed = envs.unwrapped.np_random_seed[1]
    finally:
        envs.close()
    # Failed, the reset() the next step asks for (without a seed) seeds it the same way.
    envs, resets = _same_step_vector_replacing_worker_1(tmp_path / "failed", reset_failures=1)
    try:
        _fail_the_replacements_reset_in_step(envs, resets)
        _, infos = envs.reset()
        assert infos["worker_restarted"].tolist() == [False, True]
        assert envs.unwrapped.np_random_seed[1] == unfailed
    finally:
        envs.close()


@pytest.mark.parametrize("mask", [[True, False], [False, True]])
def test_a_partial_reset_after_a_failed_restart_restarts_the_worker_and_ends_episodes(
        tmp_path: Path, mask: list[bool]) -> None:
    failures = tmp_path / "failures"
    envs = _vector(failures, "next_step")
    try:
        _fail_restart_in_step(envs, failures)
        _, infos = envs.reset(options={"reset_mask": np.array(mask)})
        assert infos.get("worker_restarted", np.zeros(2, bool)).tolist() == [False, mask[1]]
        _, rewards, _, truncated, infos = envs.step(ACTIONS)
        if mask[0]:
            # The failed worker started anyway: env 1's step reports its restart, truncated.
            assert rewards.tolist() == [1.0, 0.0] and truncated.tolist() == [False, True]
            assert infos["worker_restarted"].tolist() == [False, True]
        else:
            # Env 0's episode ended in the failed step: it starts over, not stepped past its end.
            assert rewards.tolist() == [0.0, 1.0] and not truncated.any()
    finally:
        envs.close()


def test_a_worker_replaced_in_the_step_whose_other_restart_failed_reports_its_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failures = tmp_path / "failures"
    envs = _vector(failures, "next_step")
    try:
        envs.reset(seed=0)
        # Worker 0's starts fail, worker 1's start. Not by the failures file: the two workers
        # are restarted at the same time, so which start takes its failures is left to chance.
        worker_0 = envs.unwrapped.workers[0]

        def failing_start() -> None:
            raise WorkerError("worker 0's replacement failed to start (the test's doing)")

        monkeypatch.setattr(worker_0, "restart", failing_start)
        for worker in envs.unwrapped.workers:
            kill_worker(worker)
        with pytest.raises(WorkerError, match="restarting it failed too"):
            envs.step(ACTIONS)
        monkeypatch.undo()  # the reset below starts it
        assert [w.alive() for w in envs.unwrapped.workers] == [False, True]
        envs.reset(options={"reset_mask": np.array([True, False])})
        _, rewards, _, truncated, infos = envs.step(ACTIONS)
        assert rewards.tolist() == [1.0, 0.0] and truncated.tolist() == [False, True]
        assert infos["worker_restarted"].tolist() == [False, True]
    finally:
        envs.close()
