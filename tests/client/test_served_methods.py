"""A served env's methods through Gymnasium's attribute API, as a local env's: a method is a
callable (``get_wrapper_attr``), exists (``has_wrapper_attr``), and what Gymnasium's and
SB3's vector envs build on them (``SyncVectorEnv.call``, ``VectorEnv.get_attr``,
``DummyVecEnv.env_method``) gets its result, where each raised a wire TypeError before."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)

ale_py = pytest.importorskip("ale_py")
gym.register_envs(ale_py)

PONG = ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]


def test_a_served_method_is_a_callable_through_wrappers() -> None:
    env = gym.wrappers.RecordEpisodeStatistics(gym.make("OpenEnv/Atari-v0", game="pong", provider="process"))
    try:
        env.reset(seed=0)
        assert env.has_wrapper_attr("get_action_meanings")          # as locally: True, no error
        meanings = env.get_wrapper_attr("get_action_meanings")
        assert callable(meanings) and meanings() == PONG
        assert env.has_wrapper_attr("ale")                          # there, though it cannot cross
        with pytest.raises(TypeError, match="over the wire"):
            env.get_wrapper_attr("ale")
        assert not env.has_wrapper_attr("no_such_attribute")
        # Arguments reach the served method (Environment.np_random_call draws in the worker).
        draw = env.get_wrapper_attr("np_random_call")
        assert 0 <= draw("integers", 10) < 10
    finally:
        env.close()


def test_sync_vector_env_call_and_vector_get_attr_reach_served_methods() -> None:
    local = gym.make_vec("ALE/Pong-v5", 2, vectorization_mode="sync")
    sync = gym.make_vec("OpenEnv/Atari-v0", 2, vectorization_mode="sync", game="pong", provider="process")
    remote = gym.make_vec("OpenEnv/Atari-v0", 2, game="pong", provider="process")
    try:
        for envs in (local, sync, remote):
            envs.reset(seed=0)
        want = local.call("get_action_meanings")
        assert want == (PONG, PONG)
        assert sync.call("get_action_meanings") == want
        # Gymnasium's get_attr calls a method (SyncVectorEnv.get_attr is call(name)).
        assert local.get_attr("get_action_meanings") == want
        assert remote.get_attr("get_action_meanings") == want
        assert remote.get_attr("get_action_meanings", indices=[1]) == (PONG,)
        assert remote.get_attr("render_mode") == (None, None)       # plain values as before
    finally:
        for envs in (local, sync, remote):
            envs.close()


def test_sb3_dummy_vec_env_env_method_reaches_a_served_method() -> None:
    vec_env = pytest.importorskip("stable_baselines3.common.vec_env")
    venv = vec_env.DummyVecEnv([lambda: gym.make("OpenEnv/Atari-v0", game="pong", provider="process")])
    try:
        venv.reset()
        assert venv.env_method("get_action_meanings") == [PONG]
    finally:
        venv.close()
