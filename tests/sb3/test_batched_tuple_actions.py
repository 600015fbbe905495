"""RemoteVecEnv with a Tuple action space: per-env actions (a list, as DummyVecEnv takes them)
and Gymnasium's batched form (a tuple of per-part values) both reach the right envs.

With as many envs as the space has parts, ``([1, 2], [0, 1])`` (Gymnasium's form: part 0 is
1 for env 0 and 2 for env 1) was read as per-env actions and transposed, so each env got
another env's action, silently."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from tests.sb3.tuple_action_env import ENV_ID  # noqa: E402


@pytest.fixture(scope="module")
def venv():
    env = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id=f"tests.sb3.tuple_action_env:{ENV_ID}",
                       provider="process")
    env.reset()
    yield env
    env.close()


@pytest.mark.parametrize("actions", [
    ([1, 2], [0, 1]),  # Gymnasium's batched form, parts as lists
    (np.array([1, 2]), np.array([0, 1])),  # ... as arrays
    [(1, 0), (2, 1)],  # per env, as SB3's own VecEnvs take them
])
def test_each_env_gets_its_own_action(venv, actions) -> None:
    _, rewards, _, _ = venv.step(actions)
    assert rewards.tolist() == [10.0, 21.0]
