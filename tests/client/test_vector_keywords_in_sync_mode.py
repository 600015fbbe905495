"""``gym.make_vec``'s own keywords given with ``vectorization_mode="sync"`` or ``"async"``
(RLlib's default), where each sub-env is a ``gym.make`` that passes them to the env, are
refused saying whose they are: before, only "unexpected keyword argument 'envs_per_worker';
it takes max_steps, frame_shape, render_mode", though the README documents them."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError


@pytest.mark.parametrize("env_id, extra", [("OpenEnv/Echo-v0", {}),
                                           ("OpenEnv/Gym-v0", {"env_id": "CartPole-v1"})])
def test_make_vec_s_own_keywords_in_sync_mode_are_named_as_its(env_id: str, extra: dict) -> None:
    # Gym-v0's refusal is Gymnasium's own TypeError, as locally; the others' InvalidRequestError.
    with pytest.raises((InvalidRequestError, TypeError)) as raised:
        gym.make_vec(env_id, 2, vectorization_mode="sync", provider="process", envs_per_worker=2,
                     on_worker_error="raise", **extra)
    assert "(envs_per_worker=, on_worker_error= are gym.make_vec's own, with its default " \
           "vectorization_mode" in str(raised.value), str(raised.value)


def test_an_env_argument_gets_no_such_note() -> None:
    with pytest.raises(InvalidRequestError) as raised:
        gym.make_vec("OpenEnv/Echo-v0", 2, vectorization_mode="sync", provider="process", colour=1)
    assert "gym.make_vec's own" not in str(raised.value)
