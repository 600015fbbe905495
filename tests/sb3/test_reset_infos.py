"""RemoteVecEnv.reset_infos after reset() holds each env's reset info as the env returned it,
as DummyVecEnv's does and as RemoteVecEnv's own autoreset infos do."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from tests.sb3.reset_info_env import ENV_ID  # noqa: E402


def _typed(infos):
    return [{key: (value, type(value)) for key, value in info.items()} for info in infos]


@pytest.mark.parametrize("per_env_options", [False, True])
def test_reset_infos_equal_dummy_vec_env_s(per_env_options: bool) -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 3, env_id=f"tests.sb3.reset_info_env:{ENV_ID}",
                        provider="process", envs_per_worker=2)
    ref = DummyVecEnv([lambda: gym.make(ENV_ID)] * 3)
    try:
        for v in (venv, ref):
            if per_env_options:  # options that differ: reset env by env
                v.set_options([{"k": 0}, {"k": 1}, {"k": 2}])
            v.reset()
        assert _typed(venv.reset_infos) == _typed(ref.reset_infos)
        assert venv.reset_infos[0]["_internal"] == 3
        for v in (venv, ref):  # every episode ends: the autoreset's reset infos
            v.step(np.zeros(3, dtype=np.int64))
        assert _typed(venv.reset_infos) == _typed(ref.reset_infos)
    finally:
        venv.close()
        ref.close()
