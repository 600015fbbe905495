"""noop_max and screen_size apply with preprocess=True only: given without it they are refused,
as clip_rewards, terminal_on_life_loss, frame_stack and grayscale_newaxis are, rather than
silently serving 210x160x3 frames to a user who asked for screen_size=64."""

from __future__ import annotations

import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from openenv_gym.envs.atari.env import AtariEnv, make_ale_env  # noqa: E402
from openenv_gym.errors import InvalidRequestError  # noqa: E402


@pytest.mark.parametrize("kwargs", [{"screen_size": 64}, {"screen_size": [84, 64]}, {"noop_max": 0}])
def test_preprocess_only_arguments_without_preprocess_are_refused(kwargs) -> None:
    with pytest.raises(InvalidRequestError, match=r"noop_max, screen_size, .* apply with preprocess=True only"):
        make_ale_env("pong", **kwargs)


def test_their_defaults_still_apply_with_preprocess() -> None:
    env = AtariEnv(game="pong", preprocess=True)
    assert env.observation_space.shape == (84, 84) and env.inner.noop_max == 30
    env.close()
    env = AtariEnv(game="pong", preprocess=True, screen_size=64, noop_max=0)
    assert env.observation_space.shape == (64, 64) and env.inner.noop_max == 0
    env.close()
