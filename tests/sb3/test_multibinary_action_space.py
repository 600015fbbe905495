"""PPO and A2C train on an env with a MultiBinary action space through RemoteVecEnv, as they do
on DummyVecEnv (their Bernoulli policy sends float32 0./1. actions)."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("stable_baselines3")

import torch  # noqa: E402
from stable_baselines3 import A2C, PPO  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from tests.vector.toy_envs import MULTIBINARY_ID as ENV_ID, served  # noqa: E402


def _params(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.policy.parameters()])


@pytest.mark.parametrize("algo", [PPO, A2C])
def test_on_policy_algorithms_train_as_on_dummy_vec_env(algo) -> None:
    learned = []
    for venv in (RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id=served(ENV_ID),
                              provider="process"),
                 DummyVecEnv([lambda: gym.make(ENV_ID)] * 2)):
        try:
            kwargs = {"batch_size": 16, "n_epochs": 1} if algo is PPO else {}
            model = algo("MlpPolicy", venv, n_steps=8, seed=0, device="cpu", **kwargs).learn(32)
            learned.append(_params(model))
        finally:
            venv.close()
    assert torch.equal(*learned)  # same seed, same rollouts, same updates
