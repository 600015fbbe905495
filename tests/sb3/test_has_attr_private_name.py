"""RemoteVecEnv.has_attr answers a bool for a private name, as SB3's ``VecEnv.has_attr``
promises: it raised the server's refusal ("name must be a public attribute name"). The server
serves public names only, so the adapter can never read a private one: False, while
``get_attr`` still refuses it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from openenv_gym.errors import InvalidRequestError  # noqa: E402
from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402


def test_has_attr_of_a_private_name_is_false() -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 1, env_id="CartPole-v1", provider="process")
    try:
        venv.reset()
        assert venv.has_attr("_elapsed_steps") is False   # the served env has it; unreachable
        assert venv.has_attr("_no_such_attribute") is False
        assert venv.has_attr("gravity") is True            # public names as before
        with pytest.raises(InvalidRequestError, match="public attribute name"):
            venv.get_attr("_elapsed_steps")               # the server's refusal stays
        _, rewards, _, _ = venv.step(np.array([0]))       # and the envs carry on
        assert rewards.tolist() == [1.0]
    finally:
        venv.close()
