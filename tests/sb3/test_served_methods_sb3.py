"""SB3's attribute API on a served env's methods, as on DummyVecEnv: ``get_attr`` hands out a
callable and ``has_attr`` (SB3's default is ``get_attr``) says True, neither calling the method:
``has_attr("reset")`` reset every served env behind the VecEnv's back, ``has_attr("step")`` raised."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402


def test_has_attr_and_get_attr_of_a_method_call_nothing() -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process")
    try:
        venv.seed(0)
        venv.reset()
        for _ in range(3):
            venv.step(np.array([1, 1]))
        before = np.array(venv.get_attr("state"))
        assert venv.has_attr("reset") and venv.has_attr("step")
        assert np.array_equal(before, np.array(venv.get_attr("state")))   # nothing was reset
        resets = venv.get_attr("reset", indices=[1])
        assert len(resets) == 1 and callable(resets[0])
        obs, _ = resets[0](seed=3)                                         # the stand-in calls env 1's
        assert np.allclose(np.array(venv.get_attr("state", indices=[1]))[0], obs, atol=1e-6)
        assert venv.has_attr("np_random")                                  # there, though it cannot cross
        assert not venv.has_attr("no_such_attribute")
        assert venv.get_attr("gravity") == [9.8, 9.8]                       # plain values as before
    finally:
        venv.close()


def test_get_attr_np_random_gives_each_env_s_generator_as_dummy_vec_env() -> None:
    # A Generator cannot cross the wire: get_attr("np_random") raised a TypeError, where
    # DummyVecEnv gives each env's Generator; the ones given draw in the workers.
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process")
    local = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    try:
        venv.seed(3)
        local.seed(3)
        venv.reset()
        local.reset()
        ours, theirs = venv.get_attr("np_random"), local.get_attr("np_random")
        assert [g.random() for g in ours] == [g.random() for g in theirs]
        assert venv.get_attr("np_random", indices=[1])[0].integers(100) == \
            local.get_attr("np_random", indices=[1])[0].integers(100)
    finally:
        venv.close()
        local.close()
