"""A forked child's copy of an env (a DataLoader worker, a multiprocessing 'fork' pool) runs
episodes of its own on the parent's workers: it neither steps nor resets the parent's
episode, and never stops or replaces the parent's worker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_SINGLE = r"""
import os, signal
import gymnasium as gym, openenv_gym
from openenv_gym.client.env import RemoteEnv
from tests.conftest import stop_process

def run(env, n):
    return [env.step(k % 2)[0].round(6).tolist() for k in range(n)]

ref = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
ref.reset(seed=3); expected = run(ref, 8); ref.close()

env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="process")
env.reset(seed=3)
first = run(env, 4)
pid = os.fork()
if pid == 0:
    try:
        env.step(1)
        os._exit(3)                      # was: stepped the parent's episode
    except gym.error.ResetNeeded:
        pass
    env.reset(seed=7); env.step(1); env.step(1)   # an episode of the child's own
    env.close()
    os._exit(0)
assert os.waitpid(pid, 0)[1] == 0
assert first + run(env, 4) == expected, "the child's calls changed the parent's episode"
env.close()

# A child whose call timed out must not replace (stop) the parent's worker on its reset.
env = RemoteEnv("echo", provider="process", timeout=2)
env.reset(seed=0)
worker = env._worker
pid = os.fork()
if pid == 0:
    env.reset()
    stop_process(worker.pid)
    try:
        env.step({"message": "child"})
        os._exit(3)  # the worker answered: not the timed-out call this case is about
    except openenv_gym.errors.WorkerTimeoutError:
        pass
    os.kill(worker.pid, signal.SIGCONT)
    env.reset()
    os._exit(0)
assert os.waitpid(pid, 0)[1] == 0
assert worker.alive(), "a forked child stopped the parent's worker"
assert env.step({"message": "ab"})[0]["echo"] == "ab"
env.close()
print("OK")
"""

_VECTOR = r"""
import os
import numpy as np, gymnasium as gym, openenv_gym

def run(envs, n):
    return [envs.step(np.full(4, k % 2))[0].round(6).tolist() for k in range(n)]

def make():
    return gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider="process",
                        envs_per_worker=2)

ref = make(); ref.reset(seed=3); expected = run(ref, 8); ref.close()
envs = make()
envs.reset(seed=3)
first = run(envs, 4)
pid = os.fork()
if pid == 0:
    try:
        envs.step(np.ones(4, dtype=np.int64))
        os._exit(3)                      # was: stepped the parent's envs through its shared memory
    except gym.error.ResetNeeded:
        pass
    try:
        envs.reset(options={"reset_mask": np.array([True, False, True, True])})
        os._exit(4)                      # was: env 1 left with no session in the child
    except gym.error.ResetNeeded:
        pass
    envs.reset(seed=7); envs.step(np.ones(4, dtype=np.int64))   # episodes of the child's own
    envs.close()
    os._exit(0)
assert os.waitpid(pid, 0)[1] == 0
assert all(w.alive() for w in envs.workers)
assert first + run(envs, 4) == expected, "the child's calls changed the parent's envs"
envs.close()
print("OK")
"""


def _run(script: str) -> None:
    # From the repository's root, so the script imports the tests' helpers.
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240,
                         cwd=Path(__file__).parents[2])
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stderr[-3000:]


def test_a_forked_childs_copy_of_an_env_leaves_the_parents_episode_and_worker_alone() -> None:
    _run(_SINGLE)


def test_a_forked_childs_copy_of_a_vector_env_leaves_the_parents_envs_alone() -> None:
    _run(_VECTOR)
