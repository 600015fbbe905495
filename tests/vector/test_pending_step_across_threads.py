"""A step sent with step_async is its thread's turn until step_wait gathers it: a call from
another thread (a dashboard's get_attr or render beside SB3's training loop, whose ``step``
is step_async then step_wait) waits for it instead of discarding it; the same thread's call
is refused, as Gymnasium's AsyncVectorEnv refuses it."""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.sb3 import RemoteVecEnv


def _call_beside_pending_step(step_async: Callable[[], None], step_wait: Callable[[], Any],
                              other: Callable[[], Any]) -> tuple[Any, list[Any]]:
    """``step_async()``, then ``other()`` on another thread, then ``step_wait()``: what the
    step gathered and what ``other`` returned (or raised)."""
    step_async()
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(other())
        except BaseException as exc:  # noqa: BLE001
            results.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    # Bounded: give the other call the chance to run first (it would, unless it waits).
    thread.join(2)
    gathered = step_wait()
    thread.join(60)
    assert not thread.is_alive()
    return gathered, results


def test_another_threads_get_attr_waits_for_a_pending_vector_step() -> None:
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", max_steps=7)
    try:
        envs.reset(seed=0)
        # was: get_attr discarded the pending step, and step_wait raised NoAsyncCallError
        (obs, *_), results = _call_beside_pending_step(
            lambda: envs.step_async({"message": ("ab", "cd")}), envs.step_wait,
            lambda: envs.get_attr("max_steps"))
        assert list(obs["echo"]) == ["ab", "cd"]
        assert results == [(7, 7)]
    finally:
        envs.close()


def test_sb3_step_beside_another_threads_env_method() -> None:
    venv = RemoteVecEnv("echo", 2, provider="process", max_steps=7)
    try:
        venv.reset()
        (obs, *_), results = _call_beside_pending_step(
            lambda: venv.step_async([{"message": "ab"}, {"message": "cd"}]), venv.step_wait,
            lambda: venv.get_attr("max_steps"))
        assert list(obs["echo"]) == ["ab", "cd"]
        assert results == [[7, 7]]
    finally:
        venv.close()


@contextlib.contextmanager
def _refused_while_pending(calls: Callable[[Any, RemoteVecEnv], list[Callable[[], Any]]],
                           match: str) -> Iterator[tuple[Any, RemoteVecEnv]]:
    """A vector env and an SB3 ``RemoteVecEnv`` with a step pending: each of
    ``calls(envs, venv)`` must raise ``AlreadyPendingCallError`` matching ``match``; then each
    step is gathered whole, and both are handed over for what follows."""
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", max_steps=7)
    venv = RemoteVecEnv("echo", 2, provider="process", max_steps=7)
    try:
        envs.reset(seed=0)
        venv.reset()
        envs.step_async({"message": ("ab", "cd")})
        venv.step_async([{"message": "ab"}, {"message": "cd"}])
        for call in calls(envs, venv):
            with pytest.raises(gym.error.AlreadyPendingCallError, match=match):
                call()
        obs, rewards, *_ = envs.step_wait()
        assert list(obs["echo"]) == ["ab", "cd"] and np.allclose(rewards, 0.2)
        sb3_obs, sb3_rewards, *_ = venv.step_wait()
        assert list(sb3_obs["echo"]) == ["ab", "cd"] and np.allclose(sb3_rewards, 0.2)
        yield envs, venv
    finally:
        envs.close()
        venv.close()


def test_own_threads_call_during_a_pending_step_is_refused_and_loses_nothing() -> None:
    # was: get_attr discarded this thread's pending step (the envs had stepped), and step_wait
    # then raised NoAsyncCallError: that step's rewards and episode ends were lost.
    with _refused_while_pending(lambda envs, venv: [
            lambda: envs.get_attr("max_steps"), lambda: envs.call("state"),
            lambda: envs.set_attr("max_steps", 9), lambda: venv.get_attr("max_steps"),
            lambda: venv.env_method("state", indices=[1])], r"call step_wait\(\) before") as (envs, _):
        assert envs.get_attr("max_steps") == (7, 7)  # answered once the step is gathered


def test_own_threads_reset_during_a_pending_step_is_refused_and_the_step_still_gathered() -> None:
    # was: reset() dropped this thread's pending step silently (the envs had stepped) and
    # step_wait() then raised NoAsyncCallError; AsyncVectorEnv raises AlreadyPendingCallError.
    with _refused_while_pending(lambda envs, venv: [lambda: envs.reset(seed=1), venv.reset],
                                r"call step_wait\(\) before reset") as (envs, _):
        obs, _ = envs.reset(seed=1)  # once gathered, a reset resets
        assert list(obs["echo"]) == ["", ""]


def test_own_threads_call_of_an_attribute_held_here_during_a_pending_step_is_refused() -> None:
    # was: call("spec"), get_attr("observation_space") and render() without a render mode
    # were answered on this side during the pending step, where AsyncVectorEnv (whose
    # get_attr and render are call) raises AlreadyPendingCallError for any call, as ours
    # does for the served attributes.
    with _refused_while_pending(lambda envs, venv: [
            lambda: envs.call("spec"), lambda: envs.get_attr("spec"),
            lambda: envs.get_attr("observation_space"), envs.render, envs.sub_env_view,
            lambda: venv.get_attr("spec"), lambda: venv.get_attr("action_space")],
            r"call step_wait\(\) before") as (envs, _):
        assert envs.get_attr("spec") == (envs.call("spec")[0],) * 2  # answered once gathered
        assert envs.render() == (None, None)
