"""Atari-v0's preprocessed step runs straight on the emulator (``_PreprocessedStep``) instead of
through Gymnasium's wrapper chain: it must give exactly the chain's frames, rewards, flags and
infos, over episode ends, lost lives, truncation mid-skip and every preprocessing option."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from openenv_gym.envs.atari.env import AtariEnv, make_ale_env  # noqa: E402

CASES: list[dict[str, Any]] = [
    dict(game="pong", frame_stack=4, noop_max=30, repeat_action_probability=0.0),
    # Sticky actions (ALE's own RNG), lives, reward clipping, and episodes ended at a lost life
    # mid-skip (the skip loop breaks before the screens are read).
    dict(game="breakout", frame_stack=4, terminal_on_life_loss=True, clip_rewards=True),
    # Color frames, [0, 1] floats, a channel axis, odd skips (1: no max-pooling; 3: the
    # screens of frames 2 and 3), non-square screens.
    dict(game="breakout", grayscale_obs=False, frameskip=3, frame_stack=2, screen_size=[64, 48]),
    dict(game="pong", scale_obs=True, grayscale_newaxis=True, frameskip=1, max_num_frames_per_episode=900),
    dict(game="pong", frameskip=2, noop_max=0, clip_rewards=True, max_num_frames_per_episode=1500),
    # Truncation in frames that falls inside a skip: the episode ends part way through it.
    dict(game="breakout", frameskip=4, max_num_frames_per_episode=203, frame_stack=3),
]


@pytest.mark.parametrize("kwargs", CASES, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_fast_step_equals_the_wrapper_chain(kwargs: dict[str, Any]) -> None:
    fast = AtariEnv(preprocess=True, **kwargs)
    chain = make_ale_env(preprocess=True, **kwargs)
    assert fast._step is not None  # the fast step is what is compared here
    try:
        rng = np.random.default_rng(0)
        ends = steps = 0
        for seed in range(8):
            if steps >= 300 and ends >= 1:
                break
            a, ia = fast.reset(seed=seed)
            b, ib = chain.reset(seed=seed)
            np.testing.assert_array_equal(a, b)
            assert ia == ib
            for _ in range(1200):
                action = int(rng.integers(fast.action_space.n))
                oa, ra, ta, ua, ia = fast.step(action)
                ob, rb, tb, ub, ib = chain.step(action)
                steps += 1
                assert oa.dtype == ob.dtype and oa.shape == ob.shape
                np.testing.assert_array_equal(oa, ob, err_msg=f"frame differs at step {steps}")
                assert (ra, ta, ua, ia) == (float(rb), tb, ub, ib), f"step {steps}"
                assert type(ta) is type(tb) and type(ua) is type(ub)
                if ta or ua:
                    ends += 1
                    break
        assert steps >= 300 and ends >= 1  # long enough to cover play and an episode's end
    finally:
        fast.close()
        chain.close()


def test_each_step_returns_a_fresh_frame() -> None:
    # The worker keeps a step's frame past the next one (a same-step autoreset's final
    # observation): the frame stack must not hand out its own buffer.
    env = AtariEnv(game="pong", preprocess=True, frame_stack=4)
    try:
        env.reset(seed=0)
        first, *_ = env.step(0)
        kept = first.copy()
        second, *_ = env.step(2)
        assert first is not second and not np.shares_memory(first, second)
        np.testing.assert_array_equal(first, kept)
    finally:
        env.close()


def test_continuous_actions_keep_the_wrapper_chain() -> None:
    env = AtariEnv(game="pong", preprocess=True, continuous=True, noop_max=0)
    try:
        assert env._step is None
        env.reset(seed=0)
        obs, *_ = env.step(np.array([1.0, 0.0, 0.0], np.float32))
        assert obs.shape == (84, 84)
    finally:
        env.close()
