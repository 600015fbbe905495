"""A worker container that someone else removes (a teammate's ``docker rm -f`` or
``openenv-gym docker stop``) while the trainer steps is replaced like any dead worker. The
trainer's own removal then met "removal already in progress", went on at once, and its new
container of the same name was refused (409 Conflict): about half of such steps raised
ProviderUnavailableError out of ``step()`` instead of restarting the worker."""

from __future__ import annotations

import subprocess

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.conftest import require_docker

pytestmark = pytest.mark.docker


def test_a_container_removed_by_another_client_is_replaced_within_the_step() -> None:
    require_docker()
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="docker", envs_per_worker=1,
                        on_worker_error="restart", max_steps=1_000_000)
    try:
        envs.reset(seed=0)
        for trial in range(6):  # a race: each trial hit it about one time in two
            container = envs.workers[0].container_id
            remover = subprocess.Popen(["docker", "rm", "-f", container],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(5000):
                    _, _, _, truncated, infos = envs.step({"message": ("a", "b")})
                    if truncated.any():
                        break
                assert infos.get("worker_restarted", [False])[0], f"trial {trial}: no restart"
                assert truncated.tolist() == [True, False], "the other env was touched"
            finally:
                remover.wait(timeout=60)
            assert envs.workers[0].container_id != container
    finally:
        envs.close()
