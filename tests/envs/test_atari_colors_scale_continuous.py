"""Atari-v0's other ALE and AtariPreprocessing options: obs_type="grayscale" under preprocess,
color (grayscale_obs=False) and float32 (scale_obs) preprocessed frames, and ALE's continuous
actions. Each remote env, single and vector, plays exactly the frames of the same settings made
locally with gym.make("ALE/...") and Gymnasium's wrappers; combinations that fail locally (and
inside the worker) are refused by name."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

ale_py = pytest.importorskip("ale_py")
pytest.importorskip("cv2")

import openenv_gym  # noqa: E402,F401
from openenv_gym.envs.atari.env import make_ale_env  # noqa: E402
from openenv_gym.errors import InvalidActionError, InvalidRequestError  # noqa: E402
from tests.envs.atari_rollouts import assert_same_rollout, sample_actions  # noqa: E402

gym.register_envs(ale_py)

_WRAPPER_ARGS = ("noop_max", "grayscale_obs", "grayscale_newaxis", "scale_obs")


def _local(game: str, frame_stack: int = 1, **kwargs: Any) -> gym.Env:
    """``gym.make("ALE/<Game>-v5", ...)`` (frameskip 1) in ``AtariPreprocessing`` (+ stacking)."""
    wrapper = {k: kwargs.pop(k) for k in _WRAPPER_ARGS if k in kwargs}
    env = gym.wrappers.AtariPreprocessing(gym.make(f"ALE/{game}-v5", frameskip=1, **kwargs), **wrapper)
    return gym.wrappers.FrameStackObservation(env, frame_stack) if frame_stack > 1 else env


@pytest.mark.parametrize("kwargs, shape, dtype", [
    # obs_type="grayscale" was refused ("preprocess=True reads rgb screens"); locally it is fine.
    ({"obs_type": "grayscale"}, (84, 84), np.uint8),
    ({"grayscale_obs": False}, (84, 84, 3), np.uint8),
    ({"scale_obs": True, "frame_stack": 2}, (2, 84, 84), np.float32),
    ({"scale_obs": True, "grayscale_obs": False}, (84, 84, 3), np.float32),
], ids=["grayscale-inner", "color", "scaled-stacked", "scaled-color"])
def test_preprocessed_frames_equal_local_wrappers(kwargs: dict[str, Any], shape: tuple[int, ...],
                                                  dtype: type) -> None:
    remote = gym.make("OpenEnv/Atari-v0", provider="process", game="breakout", preprocess=True, **kwargs)
    local = _local("Breakout", **kwargs)
    try:
        assert remote.observation_space.shape == shape and remote.observation_space.dtype == dtype
        assert_same_rollout(remote, local, seed=2, steps=40)
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("kwargs", [{"continuous_action_threshold": 0.3},
                                    {"preprocess": True, "noop_max": 0, "scale_obs": True}],
                         ids=["raw", "preprocessed"])
def test_continuous_actions_equal_local_ale(kwargs: dict[str, Any]) -> None:
    remote = gym.make("OpenEnv/Atari-v0", provider="process", game="pong", continuous=True, **kwargs)
    local_kwargs = {k: v for k, v in kwargs.items() if k != "preprocess"}
    local = (_local("Pong", continuous=True, **local_kwargs) if kwargs.get("preprocess")
             else gym.make("ALE/Pong-v5", continuous=True, **local_kwargs))
    try:
        assert isinstance(remote.action_space, gym.spaces.Box) and remote.action_space.dtype == np.float32
        assert_same_rollout(remote, local, seed=1, steps=60)
        # ALE asserts a float32 array; a JSON list or a float64 array arrives as the space's float32.
        remote.step([1.0, 0.0, 1.0])
        remote.step(np.array([1.0, 0.0, 1.0]))
        with pytest.raises(InvalidActionError, match="not in the action space"):
            remote.step(3)
    finally:
        remote.close()
        local.close()


def test_make_vec_carries_float_frames_and_continuoussample_actions() -> None:
    pytest.importorskip("openenv_gym.vector.env")
    kwargs = dict(continuous=True, noop_max=0, scale_obs=True, grayscale_obs=False, frame_stack=2)
    remote = gym.make_vec("OpenEnv/Atari-v0", num_envs=2, provider="process", game="pong",
                          preprocess=True, envs_per_worker=1, **kwargs)
    local = gym.vector.SyncVectorEnv([lambda: _local("Pong", **kwargs)] * 2)
    try:
        assert remote.single_observation_space == local.single_observation_space
        assert remote.single_action_space == local.single_action_space
        a, _ = remote.reset(seed=[4, 5])
        b, _ = local.reset(seed=[4, 5])
        assert a.shape == (2, 2, 84, 84, 3) and a.dtype == np.float32
        np.testing.assert_array_equal(a, b)
        rng = np.random.default_rng(0)
        for t in range(30):
            actions = sample_actions(local.single_action_space, rng, 2)
            ra, rb = remote.step(actions), local.step(actions)
            np.testing.assert_array_equal(ra[0], rb[0], err_msg=f"frames differ at step {t}")
            for got, want in zip(ra[1:4], rb[1:4]):
                np.testing.assert_array_equal(got, want)
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"preprocess": True, "obs_type": "ram"}, r"obs_type must be 'rgb' or 'grayscale'.*got obs_type='ram'"),
    # Locally: RuntimeError "Expected a numpy array with three dimensions" at the first reset.
    ({"preprocess": True, "obs_type": "grayscale", "grayscale_obs": False}, r"grayscale_obs=False .* obs_type='grayscale'"),
    ({"preprocess": True, "grayscale_obs": False, "grayscale_newaxis": True}, r"grayscale_newaxis .*\(grayscale_obs=False\)"),
    ({"scale_obs": True}, r"apply with preprocess=True only \(got scale_obs=True\)"),
    ({"grayscale_obs": False}, r"apply with preprocess=True only \(got grayscale_obs=False\)"),
    ({"preprocess": True, "scale_obs": "False"}, r"scale_obs must be True or False, got 'False'"),
    ({"continuous": "True"}, r"continuous must be True or False, got 'True'"),
    ({"continuous_action_threshold": 0.3}, r"continuous_action_threshold applies with continuous=True only"),
    ({"continuous": True, "continuous_action_threshold": float("nan")}, r"continuous_action_threshold must be a number in \[0, 1\)"),
    ({"continuous": True, "continuous_action_threshold": 1.0}, r"continuous_action_threshold must be a number in \[0, 1\)"),
    ({"continuous": True, "continuous_action_threshold": "0.5"}, r"continuous_action_threshold must be a number in \[0, 1\)"),
    # Locally: an AssertionError from ALE at reset, when the no-op starts step action 0.
    ({"continuous": True, "preprocess": True}, r"continuous=True .* set noop_max=0"),
])
def test_bad_combinations_are_refused_by_name(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        make_ale_env("pong", **kwargs)
