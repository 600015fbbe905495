"""With SAME_STEP, a step after an env's autoreset raised says so, and how to recover."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import ResetNeededError
from openenv_gym.vector import RemoteVectorEnv
from tests.vector.toy_envs import AUTORESET_RAISE_ID, served


@pytest.mark.parametrize("recover", ["reset", "reset_mask"])
def test_step_after_a_failed_same_step_autoreset_names_the_env_and_the_way_out(recover: str) -> None:
    envs = RemoteVectorEnv(2, "gym", env_id=served(AUTORESET_RAISE_ID),
                           provider="process", envs_per_worker=2,
                           autoreset_mode=AutoresetMode.SAME_STEP)
    try:
        envs.reset(seed=0)
        actions = np.zeros(2, dtype=np.int64)
        envs.step(actions)
        with pytest.raises(ValueError, match="second reset refused"):
            envs.step(actions)  # both episodes end; their autoresets raise
        with pytest.raises(ResetNeededError) as raised:
            envs.step(actions)
        text = str(raised.value)
        # was: "env 0: the episode of session '0b29…' ended at step 2 (terminated or
        # truncated); call reset to start a new one", a session id the caller never sees
        assert "env 0: its reset after its episode ended failed" in text
        assert "reset()" in text and "reset_mask" in text
        assert "session" not in text
        if recover == "reset":
            envs.reset()
        else:
            envs.reset(options={"reset_mask": np.array([True, True])})
        obs, _, terminated, _, _ = envs.step(actions)  # recovered: the new episodes step
        assert obs.ravel().tolist() == [1.0, 1.0] and not terminated.any()
    finally:
        envs.close()
