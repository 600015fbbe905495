"""Atari-v0: a remote ALE game is frame-for-frame the local one, raw or preprocessed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

ale_py = pytest.importorskip("ale_py")
pytest.importorskip("cv2")

import openenv_gym  # noqa: E402,F401
from openenv_gym.envs.atari.env import AtariEnv, make_ale_env  # noqa: E402
from openenv_gym.errors import InvalidRequestError, UnknownEnvironmentError  # noqa: E402
from tests.envs.atari_rollouts import assert_same_rollout  # noqa: E402

gym.register_envs(ale_py)


def test_remote_frames_equal_local_ale(provider: str) -> None:
    # Sticky actions on (v5's 0.25): the seeded RNG inside ALE must agree too.
    remote = gym.make("OpenEnv/Atari-v0", provider=provider, game="pong", render_mode="rgb_array")
    local = gym.make("ALE/Pong-v5", render_mode="rgb_array")
    try:
        assert remote.observation_space == local.observation_space
        assert remote.action_space == local.action_space
        for seed in (0, 7):
            assert_same_rollout(remote, local, seed, 200)
        np.testing.assert_array_equal(remote.render(), local.render())
    finally:
        remote.close()
        local.close()


def test_remote_preprocessed_equals_local_gymnasium_wrappers(provider: str) -> None:
    kwargs = dict(frameskip=4, noop_max=30, terminal_on_life_loss=True, clip_rewards=True)
    remote = gym.make("OpenEnv/Atari-v0", provider=provider, game="breakout", preprocess=True,
                      frame_stack=4, **kwargs)
    local = gym.make("ALE/Breakout-v5", frameskip=1)
    local = gym.wrappers.AtariPreprocessing(local, noop_max=30, frame_skip=4, terminal_on_life_loss=True)
    local = gym.wrappers.FrameStackObservation(
        gym.wrappers.TransformReward(local, lambda r: float(np.sign(r))), 4)
    try:
        assert remote.observation_space.shape == (4, 84, 84)
        assert remote.observation_space.dtype == np.uint8
        for seed in (0, 1):
            assert_same_rollout(remote, local, seed, 200)
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("obs_type, shape", [("grayscale", (210, 160)), ("ram", (128,))])
def test_obs_types_and_options_match_ale(obs_type: str, shape: tuple[int, ...]) -> None:
    env = AtariEnv(game="Pong", obs_type=obs_type, frameskip=2, repeat_action_probability=0.0,
                   full_action_space=True, mode=1, difficulty=1)
    local = gym.make("ALE/Pong-v5", obs_type=obs_type, frameskip=2, repeat_action_probability=0.0,
                     full_action_space=True, mode=1, difficulty=1)
    assert env.observation_space.shape == shape and env.action_space.n == 18
    assert_same_rollout(env, local, 3, 50)
    assert env.get_action_meanings()[:3] == ["NOOP", "FIRE", "UP"]


def test_passes_gymnasium_env_checker() -> None:
    from gymnasium.utils.env_checker import check_env

    check_env(AtariEnv(game="pong", preprocess=True, frame_stack=2, render_mode="rgb_array"))


def test_bad_arguments_are_named() -> None:
    with pytest.raises(UnknownEnvironmentError, match="did you mean pong"):
        AtariEnv(game="pongg")
    with pytest.raises(InvalidRequestError, match="preprocess=True"):
        AtariEnv(game="pong", frame_stack=4)
    with pytest.raises(InvalidRequestError, match="obs_type must be .rgb. or .grayscale."):
        make_ale_env("pong", obs_type="ram", preprocess=True)
    # AtariPreprocessing takes an int skip: ALE's stochastic (2, 5) (a list over JSON) is refused
    # by name, not a TypeError from inside the wrapper.
    for skip in ((2, 5), [2, 5], 0):
        with pytest.raises(InvalidRequestError, match="preprocess=True skips a fixed number of frames"):
            make_ale_env("pong", preprocess=True, frameskip=skip)
    # An id of other settings is refused with the game it names, not served as v5's.
    for legacy in ("Pong-v4", "PongNoFrameskip-v4", "BreakoutDeterministic-v4"):
        with pytest.raises(InvalidRequestError, match=r"other settings than ALE v5's.*game='(pong|breakout)'"):
            AtariEnv(game=legacy)
    # ALE's own "Invalid game mode requested" named neither the value nor the valid ones.
    with pytest.raises(InvalidRequestError, match=r"mode=99.*modes are \[0, 1\].*difficulties \[0, 1, 2, 3\]"):
        AtariEnv(game="pong", mode=99)
    with pytest.raises(InvalidRequestError, match=r"difficulty=9.*difficulties \[0, 1, 2, 3\]"):
        AtariEnv(game="pong", difficulty=9)
    # bool("False") is True: a string from a config file would turn preprocessing on.
    for flag in ("preprocess", "full_action_space", "clip_rewards"):
        with pytest.raises(InvalidRequestError, match=f"{flag} must be True or False, got 'False'"):
            AtariEnv(game="pong", **{flag: "False"})


def test_stochastic_frameskip_and_the_served_env_s_methods_reach_the_trainer() -> None:
    # A tuple frameskip reaches the worker as JSON (a list); it must still be ALE's (2, 5).
    remote = gym.make("OpenEnv/Atari-v0", provider="process", game="breakout", frameskip=(2, 5),
                      repeat_action_probability=0.0)
    local = gym.make("ALE/Breakout-v5", frameskip=(2, 5), repeat_action_probability=0.0)
    try:
        with pytest.raises(gym.error.ResetNeeded, match="before call"):
            remote.unwrapped.call("get_action_meanings")
        assert_same_rollout(remote, local, 5, 100)
        assert remote.unwrapped.call("get_action_meanings") == local.unwrapped.get_action_meanings()
        assert remote.get_wrapper_attr("game") == "breakout"  # the served env's own attribute
    finally:
        remote.close()
        local.close()


def test_a_width_height_screen_size_reaches_the_worker_as_a_tuple() -> None:
    # (84, 64) arrives as a JSON list, which AtariPreprocessing refused ("expect positive").
    env = gym.make("OpenEnv/Atari-v0", provider="process", game="pong", preprocess=True,
                   screen_size=(84, 64))
    try:
        assert env.observation_space.shape == (64, 84)
        assert env.reset(seed=0)[0].shape == (64, 84)
    finally:
        env.close()


def test_every_bundled_rom_name_resolves() -> None:
    from openenv_gym.envs.atari.games import available_games, rom_id

    # ale-py 0.10 also registers RAM ids (ALE/Pong-ram-v5), which rom_id points at obs_type="ram",
    # and ids of the multi-player ROMs ALE cannot play (ALE/Combat-v5), which it refuses by name.
    ids = [k for k in gym.registry if k.startswith("ALE/") and k.endswith("-v5") and "-ram-" not in k]
    games = set()
    for k in ids:
        try:
            games.add(rom_id(k))
        except InvalidRequestError as exc:
            assert "does not play it" in str(exc), exc
    assert games and games <= set(available_games())
    assert rom_id("TicTacToe3D") == "tic_tac_toe_3d"


def test_make_vec_preprocessed(provider: str) -> None:
    pytest.importorskip("openenv_gym.vector.env")
    envs = gym.make_vec("OpenEnv/Atari-v0", num_envs=2, provider=provider, game="pong",
                        preprocess=True, frame_stack=4, envs_per_worker=1)
    try:
        obs, _ = envs.reset(seed=[1, 2])
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
        local = make_ale_env("pong", preprocess=True, frame_stack=4)
        np.testing.assert_array_equal(obs[1], local.reset(seed=2)[0])
        for _ in range(20):
            obs, rewards, *_ = envs.step(np.array([0, 3]))
        assert obs.shape == (2, 4, 84, 84)
    finally:
        envs.close()


def test_sb3_ppo_cnn_runs_on_remote_pong(provider: str) -> None:
    sb3_vec = pytest.importorskip("openenv_gym.sb3")
    from stable_baselines3 import PPO

    vec = sb3_vec.RemoteVecEnv("OpenEnv/Atari-v0", num_envs=2, provider=provider, game="pong",
                               preprocess=True, frame_stack=4)
    try:
        model = PPO("CnnPolicy", vec, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(64)
        assert model.num_timesteps >= 64
        actions, _ = model.predict(vec.reset(), deterministic=True)
        assert actions.shape == (2,)
    finally:
        vec.close()


def test_frames_stacked_in_the_trainer_train_sb3_s_cnn_policy() -> None:
    # Stacking on the client keeps 7 KB a step on the wire, but the (84, 84) frames stacked by
    # VecFrameStack became (84, 336), which CnnPolicy refuses: grayscale_newaxis gives 84x84x1.
    sb3_vec = pytest.importorskip("openenv_gym.sb3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecFrameStack

    vec = VecFrameStack(sb3_vec.RemoteVecEnv("OpenEnv/Atari-v0", num_envs=2, provider="process",
                                             game="pong", preprocess=True, grayscale_newaxis=True), 4)
    try:
        assert vec.observation_space.shape == (84, 84, 4)
        model = PPO("CnnPolicy", vec, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(64)
        assert model.num_timesteps >= 64
    finally:
        vec.close()
    local = make_ale_env("pong", preprocess=True, grayscale_newaxis=True, repeat_action_probability=0.0)
    remote = gym.make("OpenEnv/Atari-v0", provider="process", game="pong", preprocess=True,
                      grayscale_newaxis=True, repeat_action_probability=0.0)
    try:
        np.testing.assert_array_equal(remote.reset(seed=3)[0], local.reset(seed=3)[0])
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("shared", [True, False], ids=["shared-memory", "inline"])
@pytest.mark.parametrize("mode", list(gym.vector.AutoresetMode), ids=lambda m: m.name)
def test_vector_infos_equal_sync_vector_env(provider: str, mode: gym.vector.AutoresetMode, shared: bool) -> None:
    """Atari declares its per-step infos, so they come through shared columns: the batched
    infos (with finals, seeded resets that add ``seeds`` and go inline, and unseeded autoresets
    that do not) must still be exactly Gymnasium's, and so must SB3's per-env infos."""
    from gymnasium.wrappers import TimeLimit

    from tests.vector.vector_helpers import assert_same, step_both

    kwargs = dict(preprocess=True, frame_stack=2, noop_max=0, repeat_action_probability=0.0)
    remote = gym.make_vec("OpenEnv/Atari-v0", num_envs=3, provider=provider, game="pong",
                          envs_per_worker=2, autoreset_mode=mode, max_episode_steps=7,
                          shared_memory=shared, **kwargs)
    local = gym.vector.SyncVectorEnv(
        [lambda: TimeLimit(make_ale_env("pong", **kwargs), 7)] * 3, autoreset_mode=mode)
    try:
        assert remote.remote_spec["info_types"] == AtariEnv.info_types
        assert_same(remote.reset(seed=5), local.reset(seed=5), "reset")
        rng = np.random.default_rng(0)
        for t in range(20):
            _, want = step_both(remote, local, rng.integers(0, 6, 3), f"t={t}")
            if mode is gym.vector.AutoresetMode.NEXT_STEP:
                # SB3's view: one plain dict per env, as the env itself reported it.
                per_env = remote.unwrapped.last_env_infos
                assert all([type(v) for v in info.values()] == [int] * 3 for info in per_env)
                assert [info.get("frame_number") for info in per_env] == list(want[4]["frame_number"])
        assert remote.unwrapped._step_in_columns.any(), "no info came through the columns"
    finally:
        remote.close()
        local.close()
