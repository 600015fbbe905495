"""A float action for an integer-dtype Box: taken when it is a whole number, refused (no env
stepped) when the cast would change it — as the single env and a local env's contains() judge."""

from __future__ import annotations

import numpy as np
import pytest

from openenv_gym.client.env import RemoteEnv
from openenv_gym.errors import InvalidActionError
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.intbox_env import IntBoxEnv, intbox_plugin  # noqa: F401 - the fixture


def test_fractional_float_action_is_refused_whole_one_taken(intbox_plugin: str) -> None:
    space = IntBoxEnv().action_space
    assert not space.contains(np.array([1.5, 2.0]))  # what a local env's check says
    envs = RemoteVectorEnv(2, intbox_plugin, provider="process", envs_per_worker=1)
    single = RemoteEnv(intbox_plugin, provider="process")
    try:
        envs.reset(seed=0)
        single.reset(seed=0)
        with pytest.raises(InvalidActionError, match=r"env 1: action \[1\.5, 2\.0\] .*no env stepped"):
            envs.step(np.array([[1.0, 1.0], [1.5, 2.0]]))  # was stepped as [1, 2]
        with pytest.raises(InvalidActionError):
            single.step(np.array([1.5, 2.0]))
        with pytest.raises(InvalidActionError, match=r"env 0: action \[nan, 0\.0\]"):
            envs.step(np.array([[np.nan, 0.0], [1.0, 1.0]]))
        # Whole numbers as floats are taken (an env's check would cast them), exactly.
        assert envs.step(np.array([[1.0, 1.0], [4.0, 5.0]]))[1].tolist() == [2.0, 9.0]
        assert single.step(np.array([4.0, 5.0]))[1] == 9.0
    finally:
        envs.close()
        single.close()
