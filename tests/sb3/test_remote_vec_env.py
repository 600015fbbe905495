"""openenv_gym.sb3.RemoteVecEnv: SB3 semantics equal DummyVecEnv's; SB3 algorithms train on it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3 import A2C, DQN, PPO, SAC  # noqa: E402
from stable_baselines3.common.vec_env import (  # noqa: E402
    DummyVecEnv,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
)

from openenv_gym.sb3 import RemoteVecEnv  # noqa: E402
from tests.sb3.helpers import assert_same_step  # noqa: E402

MAX_STEPS = 12


def _kill(worker) -> None:
    if getattr(worker, "container_id", None):
        subprocess.run(["docker", "kill", worker.container_id], check=True, capture_output=True)
    else:
        os.kill(worker.pid, signal.SIGKILL)


def test_steps_equal_dummy_vec_env(provider: str) -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 4, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=2, max_episode_steps=MAX_STEPS)
    ref = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=MAX_STEPS)] * 4)
    try:
        assert venv.seed(5) == ref.seed(5)
        np.testing.assert_array_equal(venv.reset(), ref.reset())
        rng = np.random.default_rng(1)
        ended = 0
        for t in range(60):
            actions = rng.integers(0, 2, 4)
            got = venv.step(actions)
            assert_same_step(got, ref.step(actions), t)
            ended += int(got[2].sum())
        assert ended >= 8
        assert venv.get_attr("env_id", indices=[0, 2]) == ["CartPole-v1"] * 2
        venv.set_attr("tag", 7, indices=1)
        assert venv.get_attr("tag", indices=1) == [7]
        assert venv.env_method("render", indices=[3]) == [None]
        assert venv.env_is_wrapped(gym.Wrapper) == [False] * 4
    finally:
        venv.close()
        ref.close()


def test_per_env_reset_options_keep_every_env_s_reset_info() -> None:
    taxi = next(i for i in ("Taxi-v3", "Taxi-v4") if i in gym.registry)
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 3, env_id=taxi, provider="process", envs_per_worker=2)
    ref = DummyVecEnv([lambda: gym.make(taxi)] * 3)
    try:
        for v in (venv, ref):
            v.seed(3)
            v.set_options([{"a": 1}, {"a": 2}, {"a": 3}])  # differ: reset env by env
        np.testing.assert_array_equal(venv.reset(), ref.reset())
        assert [sorted(i) for i in venv.reset_infos] == [sorted(i) for i in ref.reset_infos]
        assert all("action_mask" in info for info in venv.reset_infos)
    finally:
        venv.close()
        ref.close()


def test_ppo_learns_through_vec_wrappers(provider: str) -> None:
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 4, env_id="CartPole-v1", provider=provider, envs_per_worker=2)
    try:
        wrapped = VecNormalize(VecFrameStack(VecMonitor(venv), 2))
        model = PPO("MlpPolicy", wrapped, n_steps=256, batch_size=128, n_epochs=2, seed=0, device="cpu")
        model.learn(3072)
        assert model.num_timesteps >= 3072
        assert wrapped.venv.venv.episode_count > 20  # VecMonitor saw episodes end
        obs = wrapped.reset()
        assert obs.shape == (4, 8)
    finally:
        venv.close()


def test_a2c_dqn_sac_run() -> None:
    venv = RemoteVecEnv("gym", 2, env_id="CartPole-v1", provider="process")
    cont = RemoteVecEnv("gym", 2, env_id="Pendulum-v1", provider="process", envs_per_worker=2)
    try:
        A2C("MlpPolicy", VecMonitor(venv), n_steps=8, device="cpu").learn(128)
        DQN("MlpPolicy", VecMonitor(venv), learning_starts=32, buffer_size=1000, device="cpu").learn(128)
        SAC("MlpPolicy", VecMonitor(cont), learning_starts=32, buffer_size=1000, batch_size=32,
            device="cpu").learn(96)
    finally:
        venv.close()
        cont.close()


def test_killed_worker_mid_rollout_ppo_continues(provider: str) -> None:
    venv = RemoteVecEnv("gym", 4, env_id="CartPole-v1", provider=provider, envs_per_worker=2)
    try:
        from stable_baselines3.common.callbacks import BaseCallback

        seen: list[dict] = []

        class KillOnce(BaseCallback):
            def _on_step(self) -> bool:
                if self.num_timesteps == 200:
                    _kill(venv.workers[0])
                for info in self.locals["infos"]:
                    if info.get("worker_restarted"):
                        seen.append(info)
                return True

        PPO("MlpPolicy", venv, n_steps=128, batch_size=128, n_epochs=1, device="cpu").learn(1024, callback=KillOnce())
        assert len(seen) == 2  # exactly the two envs of worker 0, once
        for info in seen:
            assert info["TimeLimit.truncated"] is True and "terminal_observation" in info
        assert venv.workers[0].restarts == 1 and venv.workers[1].restarts == 0
    finally:
        venv.close()


def test_sb3_stays_off_the_import_path() -> None:
    code = "import sys, openenv_gym; print('stable_baselines3' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_per_env_options_holding_arrays_reset_as_dummy_vec_env() -> None:
    # A start state per env (an array) is a usual option; comparing such dicts with == to
    # decide whether every env got the same options raised "truth value ... is ambiguous".
    # CartPole reads low/high and ignores the other keys, as it does locally.
    venv = RemoteVecEnv("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process")
    ref = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    try:
        for v in (venv, ref):
            v.seed(3)
            v.set_options([{"start": np.array([0.5, 1.0]), "low": -0.01, "high": 0.01},
                           {"start": np.array([-2.0, 3.0]), "low": -0.02, "high": 0.02}])
        np.testing.assert_array_equal(venv.reset(), ref.reset())
        for v in (venv, ref):  # one dict for all envs (SB3 copies it per env)
            v.seed(4)
            v.set_options({"start": np.array([1.0, 2.0]), "low": -0.03, "high": 0.03})
        np.testing.assert_array_equal(venv.reset(), ref.reset())
    finally:
        venv.close()
        ref.close()
