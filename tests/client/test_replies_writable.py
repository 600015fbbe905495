"""Every array a remote env hands over is the caller's to write into, as a local env's is:
frames, ``call``/``get_attr`` values, ``np_random`` draws, and observations of an env that
strays from its own space (wire arrays are read-only views of the frame)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.client.loose_env import LOOSE_OBS_ID

CARTPOLE = dict(env_id="CartPole-v1", provider="process")


def _assert_writable(value: Any, what: str) -> None:
    assert isinstance(value, np.ndarray), what
    assert value.flags.writeable, f"{what} is read-only"
    value[...] = 0  # raises on a view of the wire frame


def test_a_single_env_s_frame_call_value_and_draw_are_writable() -> None:
    env = gym.make("OpenEnv/Gym-v0", render_mode="rgb_array", **CARTPOLE)
    try:
        env.reset(seed=0)
        _assert_writable(env.render(), "render()")
        _assert_writable(env.unwrapped.call("step", 0)[0], "call('step')'s observation")
        _assert_writable(env.np_random.random(3), "np_random.random(3)")
    finally:
        env.close()


def test_a_vector_env_s_frames_call_values_attributes_and_draws_are_writable() -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, render_mode="rgb_array", **CARTPOLE)
    try:
        envs.reset(seed=0)
        for i in range(2):
            _assert_writable(envs.render()[i], f"render()[{i}]")
            _assert_writable(envs.call("step", 0)[i][0], f"call('step')[{i}]'s observation")
            _assert_writable(envs.get_attr("state")[i], f"get_attr('state')[{i}]")
            _assert_writable(envs.np_random[i].random(3), f"np_random[{i}].random(3)")
    finally:
        envs.close()


def test_sb3_remote_vec_env_images_and_attributes_are_writable() -> None:
    from openenv_gym.sb3 import RemoteVecEnv

    venv = RemoteVecEnv("OpenEnv/Gym-v0", num_envs=2, render_mode="rgb_array", **CARTPOLE)
    try:
        venv.reset()
        for i in range(2):
            _assert_writable(venv.get_images()[i], f"get_images()[{i}]")
            _assert_writable(venv.get_attr("state")[i], f"get_attr('state')[{i}]")
    finally:
        venv.close()


@pytest.mark.parametrize("kind", ["int_box", "discrete", "float64_box", "float64_dict"])
def test_an_observation_outside_its_space_arrives_as_sent_and_writable(kind: str) -> None:
    # float64 for a float32 Box came as float32 (0.1 rounded), where gym.make hands it over
    # as the env made it (its checker only warns).
    local = gym.make(LOOSE_OBS_ID, kind=kind, disable_env_checker=True)
    env = gym.make("OpenEnv/Gym-v0", env_id=f"tests.client.loose_env:{LOOSE_OBS_ID}", kind=kind,
                   provider="process", disable_env_checker=True)
    try:
        want, got = local.reset(seed=0)[0], env.reset(seed=0)[0]
        for t in range(2):
            if kind == "float64_dict":
                assert list(got) == ["x"]
                want, got = want["x"], got["x"]
            np.testing.assert_array_equal(got, want, err_msg=f"t={t}")
            assert got.dtype == want.dtype
            _assert_writable(got, f"{kind} observation at t={t}")
            want, got = local.step(0)[0], env.step(0)[0]
    finally:
        env.close()
        local.close()


def test_a_same_step_final_observation_outside_its_space_is_writable() -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=f"tests.client.loose_env:{LOOSE_OBS_ID}",
                        kind="discrete", provider="process", autoreset_mode="same_step")
    try:
        envs.reset(seed=0)
        for _ in range(3):
            *_, infos = envs.step(np.array([0, 0]))
        assert infos["_final_obs"].all()
        assert int(infos["final_obs"][0]) == 3
        _assert_writable(infos["final_obs"][0], "final_obs[0]")
    finally:
        envs.close()
