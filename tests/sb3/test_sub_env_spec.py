"""RemoteVecEnv's ``get_attr("spec")`` gives each sub-env's spec, what ``gym.make`` gives it, as
DummyVecEnv over ``gym.make`` envs gives each env's ``EnvSpec``."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("stable_baselines3")

import openenv_gym  # noqa: F401, E402  (registers the ids)
from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402


def test_get_attr_spec_gives_each_sub_env_s_spec() -> None:
    # was: [None, None] (the vector env was built by its class, without a spec)
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process",
                        envs_per_worker=2, max_episode_steps=50)
    ref = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=50)] * 2)
    try:
        specs = venv.get_attr("spec")
        assert len(specs) == 2 and specs[0] == specs[1] and venv.get_attr("spec", indices=[1]) == specs[1:]
        assert specs[0].id == "OpenEnv/Gym-v0"
        assert specs[0].max_episode_steps == ref.get_attr("spec")[0].max_episode_steps == 50
        # The env's own arguments only: none of the vector env's (envs_per_worker, num_envs, ...).
        assert specs[0].kwargs == {"env": "gym", "env_id": "CartPole-v1", "provider": "process"}
        single = gym.make(specs[0])
        try:
            assert single.spec == specs[0]
            assert single.observation_space == venv.observation_space
        finally:
            single.close()
    finally:
        venv.close()
        ref.close()


@pytest.mark.parametrize("num_envs", [1, 2])
def test_spec_is_make_vecs_for_the_same_arguments(num_envs: int) -> None:
    # was: with num_envs=1 the spec's kwargs held num_envs=1, which gym.make_vec leaves out
    # (the spec was rebuilt by hand from a second list of the arguments).
    given = {"provider": "process", "envs_per_worker": 2, "max_steps": 7}
    venv = RemoteVecEnv("echo", num_envs, **given)
    ref = gym.make_vec("OpenEnv/Echo-v0", num_envs, vectorization_mode="vector_entry_point",
                       autoreset_mode=gym.vector.AutoresetMode.SAME_STEP, on_worker_error="restart",
                       **given)
    try:
        assert venv.venv.spec == ref.spec
        assert venv.get_attr("spec") == list(ref.get_attr("spec"))
    finally:
        venv.close()
        ref.close()


def test_spec_without_a_limit_given_has_the_served_env_s_own() -> None:
    # was: None, where DummyVecEnv's and gym.make's show CartPole-v1's 500 (the served env
    # applies it; the sub-env spec left it out).
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process", envs_per_worker=2)
    ref = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    single = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    try:
        specs = venv.get_attr("spec")
        assert specs[0].max_episode_steps == ref.get_attr("spec")[0].max_episode_steps == 500
        assert specs[0] == specs[1] == single.spec
    finally:
        venv.close()
        ref.close()
        single.close()
