"""Gymnasium's wrapper-attribute trio on a served env agrees with itself and with a local env:
``has_wrapper_attr`` is true where ``get_wrapper_attr`` finds a name, and a name nobody has
(a private one included) is an ``AttributeError``, which Gymnasium's wrappers rely on."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.wrappers import RecordEpisodeStatistics

import openenv_gym  # noqa: F401  (registers the ids)


def test_has_get_set_wrapper_attr_agree_through_wrappers() -> None:
    env = RecordEpisodeStatistics(gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process"))
    try:
        assert not env.has_wrapper_attr("gravity")       # no served env yet
        env.reset(seed=0)
        assert env.get_wrapper_attr("gravity") == 9.8
        assert env.has_wrapper_attr("gravity")           # the served CartPole's, as locally
        assert not env.has_wrapper_attr("no_such_attribute")
        for name in ("no_such_attribute", "_max_episode_steps"):
            with pytest.raises(AttributeError):
                env.get_wrapper_attr(name)
        # A private name ends on the outermost wrapper, as locally, instead of a worker error.
        assert env.set_wrapper_attr("_tag", 1)
        assert env.get_wrapper_attr("_tag") == 1
    finally:
        env.close()


def test_a_served_attribute_read_off_the_client_names_where_it_is() -> None:
    # Locally env.unwrapped.gravity is CartPole's own attribute; the client's plain attribute
    # lookup must not become a request, and its error says how to read the served env's.
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    try:
        env.reset(seed=0)
        with pytest.raises(AttributeError, match=r"get_wrapper_attr\('gravity'\)"):
            env.unwrapped.gravity
        assert not hasattr(env.unwrapped, "gravity")
        assert env.unwrapped.get_wrapper_attr("gravity") == 9.8
        with pytest.raises(AttributeError) as private:
            env.unwrapped._gravity
        assert "get_wrapper_attr" not in str(private.value)  # a private name is nobody's to serve
    finally:
        env.close()


def test_a_served_attribute_read_after_close_says_the_env_is_closed() -> None:
    # It said "call reset() first", which does not help: a closed env is not reset again.
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    env.reset(seed=0)
    env.close()
    with pytest.raises(AttributeError, match=r"'gravity' .*ended with close\(\): make another env"):
        env.unwrapped.get_wrapper_attr("gravity")  # (gym.make's wrappers word their own)
    assert not env.has_wrapper_attr("gravity")


def test_a_served_env_name_the_client_class_also_has_is_the_served_envs() -> None:
    # CartPole's ``state`` read the client's state() method, and setting it shadowed that
    # method on the client: the served CartPole kept its state and stepped on from it.
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
    local = gym.make("CartPole-v1")
    try:
        env.reset(seed=0)
        local.reset(seed=0)
        assert env.get_wrapper_attr("state").tolist() == local.get_wrapper_attr("state").tolist()
        for e in (env, local):
            assert e.set_wrapper_attr("state", [0.0, 0.0, 0.0, 0.0])
        assert env.step(1)[0].tolist() == local.step(1)[0].tolist()
        assert env.unwrapped.state()["step_count"] == 1  # the client's own method is still there
        assert env.get_wrapper_attr("session_id") == env.unwrapped.session_id  # none served: the client's
    finally:
        env.close()
        local.close()
