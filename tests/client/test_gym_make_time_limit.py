"""``gym.make(..., max_episode_steps=N)`` sets the served env's own limit too, as it does locally.

``gym.make`` keeps ``max_episode_steps`` for the ``TimeLimit`` it wraps around the client,
while a served env has a limit of its own (Gym-v0's inner ``TimeLimit``: MountainCar-v0's
200; Echo's ``max_steps``: 100): without passing it on, longer episodes ended at the served
env's limit, where ``gym.make("MountainCar-v0", max_episode_steps=300)`` runs to 300.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401

PUSH_RIGHT = 2  # MountainCar never reaches the flag pushing one way: episodes end by the limit


def episode(env: gym.Env, action: Any = PUSH_RIGHT) -> tuple[int, bool, bool, Any]:
    """Steps, the last flags and the last observation of one episode of ``action``."""
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return steps, terminated, truncated, obs


def same_episode(ours: gym.Env, local: gym.Env) -> None:
    try:
        got, want = episode(ours), episode(local)
        assert got[:3] == want[:3]
        np.testing.assert_array_equal(got[3], want[3])
    finally:
        ours.close()
        local.close()


@pytest.mark.parametrize("limit", [300, 50])
def test_gym_make_max_episode_steps_is_the_served_envs_limit(limit: int) -> None:
    # 300 is past MountainCar-v0's own 200: the served env's TimeLimit ended the episode there.
    ours = gym.make("OpenEnv/Gym-v0", env_id="MountainCar-v0", provider="process",
                    max_episode_steps=limit)
    same_episode(ours, gym.make("MountainCar-v0", max_episode_steps=limit))


def test_without_max_episode_steps_the_served_env_keeps_its_own_limit() -> None:
    ours = gym.make("OpenEnv/Gym-v0", env_id="MountainCar-v0", provider="process")
    assert "max_episode_steps" not in ours.unwrapped.spec.kwargs
    same_episode(ours, gym.make("MountainCar-v0"))


def test_an_env_made_again_from_its_spec_keeps_the_limit() -> None:
    first = gym.make("OpenEnv/Gym-v0", env_id="MountainCar-v0", provider="process",
                     max_episode_steps=300)
    try:
        again = gym.make(first.spec)
    finally:
        first.close()
    assert again.spec.max_episode_steps == 300
    same_episode(again, gym.make("MountainCar-v0", max_episode_steps=300))


def test_sub_envs_of_a_sync_vector_env_get_the_limit() -> None:
    ours = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, vectorization_mode="sync",
                        env_id="MountainCar-v0", provider="process", max_episode_steps=300)
    local = gym.make_vec("MountainCar-v0", num_envs=2, vectorization_mode="sync",
                         max_episode_steps=300)
    try:
        for envs in (ours, local):
            envs.reset(seed=0)
        actions = np.full(2, PUSH_RIGHT)
        for step in range(1, 301):
            got, want = ours.step(actions), local.step(actions)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[3], want[3])  # truncated at 300, not at 200
        assert got[3].all()
    finally:
        ours.close()
        local.close()


def test_make_vec_minus_one_removes_the_served_envs_limit_as_locally() -> None:
    # was: refused ("max_episode_steps must be a positive integer"), where a local
    # make_vec runs MountainCar past its 200 steps.
    ours = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="MountainCar-v0", provider="process",
                        max_episode_steps=-1)
    local = gym.make_vec("MountainCar-v0", num_envs=2, max_episode_steps=-1)
    try:
        for envs in (ours, local):
            envs.reset(seed=0)
        actions = np.full(2, PUSH_RIGHT)
        for _ in range(250):
            got, want = ours.step(actions), local.step(actions)
            np.testing.assert_array_equal(got[0], want[0])
            assert not got[3].any() and not want[3].any()
        assert ours.get_attr("spec")[0].max_episode_steps is None
    finally:
        ours.close()
        local.close()


def echo_episode_length(env: gym.Env) -> int:
    """Steps of one Echo episode (the env is closed after)."""
    try:
        return episode(env, {"message": "hi"})[0]
    finally:
        env.close()


def test_echo_runs_to_gym_makes_limit_past_its_own_max_steps() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_episode_steps=150)
    assert echo_episode_length(env) == 150  # Echo's own max_steps is 100


def test_the_served_envs_own_argument_wins() -> None:
    # As in the vector env: an argument given for the served env's limit is kept.
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_episode_steps=150, max_steps=5)
    assert echo_episode_length(env) == 5


class _Holder(gym.Env):
    """A local env that serves nothing itself: it builds a remote Echo env in its constructor."""

    def __init__(self) -> None:
        from openenv_gym import RemoteEnv

        self.inner = RemoteEnv("echo", provider="process")
        self.observation_space, self.action_space = self.inner.observation_space, self.inner.action_space


def test_a_remote_env_built_inside_another_envs_constructor_keeps_its_own_limit() -> None:
    # gym.make's limit is for the env it builds; a remote env that one makes for itself is
    # not the one the TimeLimit wraps.
    gym.register("OpenEnvTest/Holder-v0", entry_point=_Holder)
    try:
        holder = gym.make("OpenEnvTest/Holder-v0", max_episode_steps=150, disable_env_checker=True)
    finally:
        del gym.registry["OpenEnvTest/Holder-v0"]
    assert echo_episode_length(holder.unwrapped.inner) == 100  # Echo's own max_steps


def minus_one_matches_local(ours: gym.Env) -> None:
    """``ours`` (MountainCar-v0 served without a limit) steps past 200 as the local one does."""
    local = gym.make("MountainCar-v0", max_episode_steps=-1)
    try:
        for env in (ours, local):
            env.reset(seed=0)
        for _ in range(250):  # past 200, no episode end on either side
            got, want = ours.step(PUSH_RIGHT), local.step(PUSH_RIGHT)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[2:4] == want[2:4] == (False, False)
    finally:
        ours.close()
        local.close()


def test_minus_one_removes_the_served_envs_limit_as_locally() -> None:
    # gym.make's -1 (locally: no TimeLimit at all) only dropped the trainer's TimeLimit: the
    # served env's own ended episodes at 200.
    minus_one_matches_local(gym.make("OpenEnv/Gym-v0", env_id="MountainCar-v0", provider="process",
                                     max_episode_steps=-1))


def test_env_kwargs_minus_one_removes_it_too() -> None:
    minus_one_matches_local(gym.make("OpenEnv/Gym-v0", env_id="MountainCar-v0", provider="process",
                                     env_kwargs={"max_episode_steps": -1}))


def test_minus_one_leaves_the_limit_of_an_env_that_has_no_value_for_none() -> None:
    # Echo's max_steps takes no -1 (it would refuse it): its own limit stays.
    env = gym.make("OpenEnv/Echo-v0", provider="process", max_episode_steps=-1)
    assert echo_episode_length(env) == 100


@pytest.mark.parametrize("env_id, kwargs, limit", [
    ("OpenEnv/Gym-v0", {"env_id": "CartPole-v1"}, 500),
    ("OpenEnv/Gym-v0", {"env_id": "CartPole-v1", "max_episode_steps": -1}, None),
    ("OpenEnv/Gym-v0", {"env_id": "CartPole-v1", "max_episode_steps": 7}, 7),
    ("OpenEnv/Echo-v0", {"max_steps": 9}, 9),
])
def test_spec_max_episode_steps_is_the_served_envs_limit(env_id: str, kwargs: dict[str, Any],
                                                         limit: int | None) -> None:
    # was: None unless gym.make was given one, where a local CartPole-v1's spec says 500
    # (SB3's HerReplayBuffer reads it).
    env = gym.make(env_id, provider="process", **kwargs)
    try:
        assert env.spec.max_episode_steps == limit
        if env_id == "OpenEnv/Gym-v0":
            local = gym.make(kwargs["env_id"], **{k: v for k, v in kwargs.items() if k != "env_id"})
            assert env.spec.max_episode_steps == local.spec.max_episode_steps
    finally:
        env.close()


def test_attached_env_refuses_a_limit_longer_than_the_servers_own() -> None:
    # was: gym.make(..., base_url=..., max_episode_steps=150) ran 100-step episodes (the
    # server's Echo ends them first) without a word; a shorter limit still works.
    from openenv_gym.providers.process import ProcessProvider

    provider = ProcessProvider()
    [worker] = provider.start("echo", 1, {"max_steps": 10})
    try:
        for asked in (15, -1):
            with pytest.raises(openenv_gym.InvalidRequestError,
                               match=r"ends episodes after 10 steps.*ask for at most 10.*max_steps"):
                gym.make("OpenEnv/Echo-v0", base_url=worker.address, max_episode_steps=asked)
        env = gym.make("OpenEnv/Echo-v0", base_url=worker.address, max_episode_steps=4)
        try:
            assert env.spec.max_episode_steps == 4
            steps, _, truncated, _ = episode(env, {"message": "x"})
            assert (steps, truncated) == (4, True)
        finally:
            env.close()
        assert worker.alive()  # the refusals left the server serving
    finally:
        provider.stop_all([worker])


def test_an_env_made_without_a_limit_is_made_again_without_one() -> None:
    # gym.make's -1 leaves its spec with max_episode_steps None: made again from it, a local
    # env has no TimeLimit, where the served env got its own 200 back.
    first = gym.make("OpenEnv/Gym-v0", env_id="MountainCar-v0", provider="process",
                     max_episode_steps=-1)
    try:
        again = gym.make(first.spec)
    finally:
        first.close()
    local = gym.make(gym.make("MountainCar-v0", max_episode_steps=-1).spec)
    try:
        assert again.spec.max_episode_steps is None
        for envs in (again, local):
            envs.reset(seed=0)
        for _ in range(250):
            got, want = again.step(PUSH_RIGHT), local.step(PUSH_RIGHT)
            np.testing.assert_array_equal(got[0], want[0])
            assert not got[3] and not want[3]
    finally:
        again.close()
        local.close()


def test_a_sub_env_of_make_vec_without_a_limit_is_made_again_without_one() -> None:
    ours = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="MountainCar-v0", provider="process",
                        max_episode_steps=-1)
    try:
        again = gym.make(ours.get_attr("spec")[0])
    finally:
        ours.close()
    try:
        again.reset(seed=0)
        for _ in range(250):
            assert not again.step(PUSH_RIGHT)[3]
    finally:
        again.close()
