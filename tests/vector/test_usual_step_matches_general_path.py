"""``RemoteVectorEnv.step`` (its straight-line usual step, ``_usual_step``) gives exactly what
``step_async`` + ``step_wait`` (the general path) give, and leaves the same state behind.

Two vector envs built alike and seeded alike are driven with the same actions, one by
``step()``, one by ``step_async()``/``step_wait()``: every return value (or raised error) and
the episode bookkeeping after each step must be equal, over every autoreset mode, with and
without a time limit, shared memory or not, slices of uneven size, declared infos, float
actions in the space's dtype or not, refused actions, masked resets and killed workers.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.vector_helpers import assert_same, kill_worker

N = 5  # not a multiple of envs_per_worker 2 or 3: the last slice is shorter
STEPS = 24

#: What a step leaves behind that the next step, a masked reset or SB3 reads.
_STATE = ("_autoreset_envs", "_elapsed", "_step_in_columns", "last_final", "last_env_infos",
          "_terminations", "_truncations", "_reset_needed", "_lost", "_restart_seeds",
          "_pending")

Hook = Callable[[int, RemoteVectorEnv, RemoteVectorEnv], None]


def _norm(value: Any) -> Any:
    """``value`` with what differs between two pools blanked in its texts: worker socket
    addresses and log tails (in ``worker_error`` infos and raised errors)."""
    if isinstance(value, str):
        return re.sub(r"unix://\S+?\.sock", "<socket>", value).split("\nlast worker log lines")[0]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_norm(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        out = np.empty(len(value), dtype=object)
        out[:] = [_norm(v) for v in value]
        return out
    return value


def _outcome(call: Callable[[], Any]) -> Any:
    """What ``call`` returned, or the type and first line of what it raised."""
    try:
        return _norm(("returned", call()))
    except Exception as exc:  # noqa: BLE001  (any error must be the same on both paths)
        return ("raised", type(exc).__name__, _norm(str(exc).split("\n")[0]))


def _state(envs: RemoteVectorEnv) -> dict[str, Any]:
    return _norm({name: getattr(envs, name) for name in _STATE})


def _general_step(envs: RemoteVectorEnv, actions: Any) -> Any:
    envs.step_async(actions)
    return envs.step_wait()


def _make(mode: AutoresetMode, limit: int | None, shared: bool, epw: int,
          env: str = "Gym-v0", num_envs: int = N, **kwargs: Any) -> RemoteVectorEnv:
    envs = gym.make_vec(f"OpenEnv/{env}", num_envs=num_envs, provider="process",
                        envs_per_worker=epw, autoreset_mode=mode, max_episode_steps=limit,
                        shared_memory=shared, **kwargs)
    assert isinstance(envs, RemoteVectorEnv)
    return envs


def _drive(make: Callable[[], RemoteVectorEnv], actions: Callable[[int], Any],
           steps: int = STEPS, hook: Hook | None = None) -> int:
    """Drive two envs from ``make`` alike, ``step()`` against the general path, and compare
    every step's outcome and the state it leaves.

    Returns:
        How many steps took the usual (straight-line) path.
    """
    fast, general = make(), make()
    usual = 0
    try:
        assert_same(_outcome(lambda: fast.reset(seed=3)), _outcome(lambda: general.reset(seed=3)), "reset")
        for t in range(steps):
            if hook is not None:
                hook(t, fast, general)
            if fast.autoreset_mode is AutoresetMode.DISABLED and fast._autoreset_envs.any():
                mask = fast._autoreset_envs.copy()
                assert_same(_outcome(lambda: fast.reset(options={"reset_mask": mask})),
                            _outcome(lambda: general.reset(options={"reset_mask": mask})), f"t={t} reset")
            acts = actions(t)
            usual += fast._pending is None and fast._usual()
            got = _outcome(lambda: fast.step(acts))
            want = _outcome(lambda: _general_step(general, acts))
            assert_same(got, want, f"t={t}")
            assert_same(_state(fast), _state(general), f"t={t} state")
    finally:
        fast.close()
        general.close()
    return usual


def _draws(make_one: Callable[[np.random.Generator], Any]) -> Callable[[int], Any]:
    rng = np.random.default_rng(0)
    batches = [make_one(rng) for _ in range(STEPS)]
    return lambda t: batches[t]


_CARTPOLE = _draws(lambda rng: rng.integers(0, 2, N))
_MODES = pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)


@_MODES
@pytest.mark.parametrize("limit", [8, None], ids=["limit8", "no-limit"])
@pytest.mark.parametrize("shared,epw", [(True, 1), (False, 2), (True, 3)],
                         ids=["shm-epw1", "inline-epw2", "shm-epw3"])
def test_cartpole(mode: AutoresetMode, limit: int | None, shared: bool, epw: int) -> None:
    usual = _drive(lambda: _make(mode, limit, shared, epw, env_id="CartPole-v1"), _CARTPOLE)
    # SAME_STEP with a time limit kept here never takes it (the limit resets in the message).
    assert usual > 0 or (mode is AutoresetMode.SAME_STEP and limit is not None)


@_MODES
def test_declared_infos_in_columns(mode: AutoresetMode) -> None:
    usual = _drive(lambda: _make(mode, 8, True, 2, env_id="FrozenLake-v1", info_types={"prob": "float"}),
                   _draws(lambda rng: rng.integers(0, 4, N)))
    assert usual > 0 or mode is AutoresetMode.SAME_STEP


@_MODES
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_box_actions_in_any_float_dtype(mode: AutoresetMode, dtype: type) -> None:
    """Pendulum's float actions: float64 rows travel inline (not through the column), and a
    NaN or out-of-bounds action (refused, or clipped by the env) is handled alike."""
    def actions(t: int) -> np.ndarray:
        batch = np.linspace(-2, 2, N, dtype=dtype).reshape(N, 1) * ((t % 4) / 4)
        if t % 7 == 5:
            batch[2] = 5.0
        if t % 7 == 6:
            batch[3] = np.nan
        return batch
    assert _drive(lambda: _make(mode, None, False, 3, env_id="Pendulum-v1"), actions) > 0


def _wait_dead(worker: Any) -> None:
    """Until a killed worker is gone: both pools then see it dead at the same step."""
    for _ in range(300):
        if not worker.alive():
            return
        time.sleep(0.1)
    raise AssertionError(f"worker {worker.pid} did not die")


@_MODES
@pytest.mark.parametrize("on_worker_error", ["restart", "raise"])
def test_killed_worker(mode: AutoresetMode, on_worker_error: str) -> None:
    """A worker killed mid-run: its envs restart (or the step raises, and reset() replaces it)."""
    def kill_then_reset(t: int, fast: RemoteVectorEnv, general: RemoteVectorEnv) -> None:
        if t in (4, 14):
            for envs in (fast, general):
                kill_worker(envs.workers[1])
                _wait_dead(envs.workers[1])
        if fast._reset_needed is not None:
            assert_same(_outcome(lambda: fast.reset(seed=5)), _outcome(lambda: general.reset(seed=5)),
                        f"t={t} reset after raise")
    usual = _drive(lambda: _make(mode, None, True, 2, env_id="CartPole-v1", on_worker_error=on_worker_error),
                   _CARTPOLE, hook=kill_then_reset)
    assert usual > 0


@_MODES
def test_refused_actions_masked_resets_and_copy_false(mode: AutoresetMode) -> None:
    """Actions out of the space, of the wrong shape or count, or floats for Discrete are
    refused alike (no env stepped); masked resets between steps; ``copy=False``."""
    bad = {2: np.array([0, 1, 2, 0, 1]), 3: np.array([0, -1, 1, 0, 1]), 6: np.zeros(3, dtype=int),
           7: np.zeros((N, 2), dtype=int), 9: np.full(N, 0.5), 10: 1}

    def masked_reset(t: int, fast: RemoteVectorEnv, general: RemoteVectorEnv) -> None:
        if t in (5, 12, 13):
            mask = np.array([True, False, True, False, False])
            seeds = [t, None, t + 1, None, None]
            assert_same(_outcome(lambda: fast.reset(seed=seeds, options={"reset_mask": mask})),
                        _outcome(lambda: general.reset(seed=seeds, options={"reset_mask": mask})),
                        f"t={t} masked reset")
    usual = _drive(lambda: _make(mode, 8, False, 3, env_id="CartPole-v1", copy=False),
                   lambda t: bad.get(t, _CARTPOLE(t)), hook=masked_reset)
    assert usual > 0 or mode is AutoresetMode.SAME_STEP


def test_text_observations_never_take_the_usual_step() -> None:
    usual = _drive(lambda: _make(AutoresetMode.NEXT_STEP, 4, True, 2, env="Echo-v0", num_envs=3),
                   lambda t: {"message": tuple("x" * (t % 3 + i) for i in range(3))}, steps=10)
    assert usual == 0


def test_finrl_float64_and_float32_actions() -> None:
    space = _make(AutoresetMode.NEXT_STEP, 6, True, 2, env="FinRL-v0", num_envs=3)
    low, high, shape = space.single_action_space.low, space.single_action_space.high, space.single_action_space.shape
    space.close()
    rng = np.random.default_rng(2)
    batches = [rng.uniform(low, high, (3, *shape)) for _ in range(12)]
    usual = _drive(lambda: _make(AutoresetMode.NEXT_STEP, 6, True, 2, env="FinRL-v0", num_envs=3),
                   lambda t: batches[t] if t % 2 else batches[t].astype(np.float32), steps=12)
    assert usual > 0


def test_step_after_close_and_before_reset() -> None:
    fast, general = (_make(AutoresetMode.NEXT_STEP, 8, True, 2, env_id="CartPole-v1") for _ in range(2))
    try:
        acts = np.zeros(N, dtype=int)
        assert_same(_outcome(lambda: fast.step(acts)), _outcome(lambda: _general_step(general, acts)), "before reset")
    finally:
        fast.close()
        general.close()
    assert_same(_outcome(lambda: fast.step(acts)), _outcome(lambda: _general_step(general, acts)), "closed")
