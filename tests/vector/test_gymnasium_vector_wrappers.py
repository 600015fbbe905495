"""Gymnasium's own vector wrappers give exactly the same results on a RemoteVectorEnv as on the
local reference, ``gym.make_vec`` of the local env with ``vectorization_mode="sync"``: same
seeds, actions and autoreset mode; same observations, rewards, episode ends and infos.

Only wrappers whose output depends on more than each raw observation are here: those that read
infos, episode ends or the autoreset mode (``RecordEpisodeStatistics``, ``DictInfoToList``,
``NormalizeReward``, ``NormalizeObservation``), those that change actions on their way to the
envs (``TransformAction``, ``RescaleAction``, ``ClipAction``: the dtype and bounds of what is
sent), and ``FilterObservation`` on a Dict observation with text (the batch of non-array
observations). Gymnasium refuses its observation wrappers with ``SAME_STEP`` (and
``NormalizeObservation`` with ``DISABLED``) on any vector env: those pairs are left out.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.wrappers import vector as wrappers

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.vector_helpers import MAX_STEPS, assert_same

N = 3
SEED = 5
NEXT, SAME, DISABLED = AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED

Wrap = Callable[[VectorEnv], VectorEnv]
Actions = Callable[[int], Any]


class _OptionsKept(VectorWrapper):
    """The reference without Gymnasium's PR #1696 bug: ``SyncVectorEnv`` pops ``reset_mask`` out
    of the caller's ``options``, so a ``RecordEpisodeStatistics`` above it zeroes every env's
    statistics after a partial reset. Ours leaves ``options`` alone (README): hand the
    reference a copy, so that both keep the statistics of the envs still running."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        return self.env.reset(seed=seed, options=None if options is None else dict(options))


def _without_wall_time(value: Any) -> Any:
    """``value`` without ``RecordEpisodeStatistics``' episode times (``episode["t"]``), which
    are wall time; returns and lengths stay."""
    if isinstance(value, dict):
        return {key: ({k: v for k, v in sub.items() if k not in ("t", "_t")}
                      if key == "episode" and isinstance(sub, dict) else _without_wall_time(sub))
                for key, sub in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_without_wall_time(v) for v in value)
    return value


def _assert_exact(got: Any, want: Any, where: str) -> None:
    """Equal values (``assert_same`` says where they differ) of the same types: a numpy int64
    is not a float64 equal to it (DictInfoToList hands out numpy scalars)."""
    got, want = _without_wall_time(got), _without_wall_time(want)
    assert_same(got, want, where)
    assert data_equivalence(got, want, exact=True), f"{where}: types differ: {got!r} != {want!r}"


def _compare(remote: RemoteVectorEnv, local: VectorEnv, wrap: Wrap, mode: AutoresetMode,
             actions: Actions, steps: int) -> int:
    """Wrap both alike, reset and step them with the same actions, and assert the same results
    (with ``DISABLED``, ended envs are reset with ``reset_mask`` first).

    Returns:
        How many partial resets (some envs ended, others not) the run went through.
    """
    ours, ref = wrap(remote), wrap(_OptionsKept(local))
    try:
        assert ours.unwrapped is remote and ours.metadata["autoreset_mode"] is mode
        assert ours.observation_space == ref.observation_space
        assert ours.action_space == ref.action_space
        spaces = (ours.observation_space, ours.action_space, ours.single_observation_space)
        assert pickle.loads(pickle.dumps(spaces)) == spaces
        _assert_exact(ours.reset(seed=SEED), ref.reset(seed=SEED), "reset")
        ended = np.zeros(N, dtype=bool)
        partial = 0
        for t in range(steps):
            if mode is DISABLED and ended.any():
                mask = ended.copy()
                partial += int(not mask.all())
                _assert_exact(ours.reset(options={"reset_mask": mask}),
                              ref.reset(options={"reset_mask": mask}), f"t={t} reset")
            got, want = ours.step(actions(t)), ref.step(actions(t))
            _assert_exact(got, want, f"t={t}")
            ended = want[2] | want[3]
            partial += int(mode is not DISABLED and ended.any() and not ended.all())
        return partial
    finally:
        ours.close()
        ref.close()


def _cartpole(mode: AutoresetMode) -> tuple[RemoteVectorEnv, VectorEnv]:
    remote = gym.make_vec("OpenEnv/Gym-v0", num_envs=N, env_id="CartPole-v1", provider="process",
                          envs_per_worker=2, autoreset_mode=mode, max_episode_steps=MAX_STEPS)
    local = gym.make_vec("CartPole-v1", num_envs=N, vectorization_mode="sync",
                         vector_kwargs={"autoreset_mode": mode}, max_episode_steps=MAX_STEPS)
    return remote, local


def _cartpole_actions(t: int) -> np.ndarray:
    # Env 0 always pushes right and falls early, env 1 balances to the time limit, env 2
    # wavers: episodes end at different steps, so partial resets (and final infos) happen.
    return np.array([1, t % 2, (t // 3) % 2])


def _flip(actions: np.ndarray) -> np.ndarray:
    """The other action, as int8 (not the space's int64): a transformed batch in another dtype."""
    return (1 - actions).astype(np.int8)


#: (name, wrap, modes) for CartPole through Gym-v0.
CARTPOLE_CASES: list[tuple[str, Wrap, tuple[AutoresetMode, ...]]] = [
    ("RecordEpisodeStatistics+DictInfoToList",
     lambda e: wrappers.DictInfoToList(wrappers.RecordEpisodeStatistics(e)), (NEXT, SAME, DISABLED)),
    ("TransformAction+NormalizeReward+ClipReward",
     lambda e: wrappers.ClipReward(wrappers.NormalizeReward(wrappers.TransformAction(e, _flip)), -0.6, 0.6),
     (NEXT, SAME, DISABLED)),
    ("NormalizeObservation+RecordEpisodeStatistics",
     lambda e: wrappers.RecordEpisodeStatistics(wrappers.NormalizeObservation(e)), (NEXT,)),
]


@pytest.mark.parametrize("name, wrap, mode", [
    pytest.param(name, wrap, mode, id=f"{name}-{mode.name}")
    for name, wrap, modes in CARTPOLE_CASES for mode in modes])
def test_cartpole_wrappers_equal_local_sync(name: str, wrap: Wrap, mode: AutoresetMode) -> None:
    remote, local = _cartpole(mode)
    partial = _compare(remote, local, wrap, mode, _cartpole_actions, 30)
    assert partial > 0, "episodes were meant to end at different steps"


@pytest.mark.parametrize("mode", [NEXT, SAME, DISABLED], ids=lambda m: m.name)
def test_box_action_wrappers_equal_local_sync(mode: AutoresetMode) -> None:
    """RescaleAction and ClipAction hand the envs float64 actions, some outside the bounds."""
    remote = gym.make_vec("OpenEnv/Gym-v0", num_envs=N, env_id="Pendulum-v1", provider="process",
                          envs_per_worker=2, autoreset_mode=mode, max_episode_steps=4)
    local = gym.make_vec("Pendulum-v1", num_envs=N, vectorization_mode="sync",
                         vector_kwargs={"autoreset_mode": mode}, max_episode_steps=4)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1.5, 1.5, (10, N, 1))
    low, high = np.float32(-1), np.float32(1)
    _compare(remote, local, lambda e: wrappers.ClipAction(wrappers.RescaleAction(e, low, high)),
             mode, lambda t: actions[t], len(actions))


@pytest.mark.parametrize("mode", [NEXT, DISABLED], ids=lambda m: m.name)
def test_filter_observation_on_text_dict_equals_sync(mode: AutoresetMode) -> None:
    """Echo's Dict observation (text and a length): its reference is ``vectorization_mode=
    "sync"`` of the same id, a SyncVectorEnv of single remote envs."""
    remote = gym.make_vec("OpenEnv/Echo-v0", num_envs=N, provider="process", envs_per_worker=2,
                          autoreset_mode=mode, max_steps=3)
    local = gym.make_vec("OpenEnv/Echo-v0", num_envs=N, vectorization_mode="sync", provider="process",
                         vector_kwargs={"autoreset_mode": mode}, max_steps=3)
    _compare(remote, local,
             lambda e: wrappers.DictInfoToList(wrappers.RecordEpisodeStatistics(
                 wrappers.FilterObservation(e, ["length"]))),
             mode, lambda t: {"message": ("a" * t, "bb", "é" * (t % 3))}, 8)


def test_atari_infos_through_wrappers_equal_local_sync() -> None:
    """Atari's declared infos (lives, frame numbers: shared columns) and final infos (SAME_STEP)
    under RecordEpisodeStatistics and DictInfoToList."""
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    remote = gym.make_vec("OpenEnv/Atari-v0", num_envs=N, game="pong", provider="process",
                          envs_per_worker=2, autoreset_mode=SAME, max_episode_steps=5)
    local = gym.make_vec("ALE/Pong-v5", num_envs=N, vectorization_mode="sync",
                         vector_kwargs={"autoreset_mode": SAME}, max_episode_steps=5)
    _compare(remote, local,
             lambda e: wrappers.DictInfoToList(
                 wrappers.RecordEpisodeStatistics(wrappers.ClipReward(e, 0, 1))),
             SAME, lambda t: np.array([t % 6, 2, 3]), 12)
