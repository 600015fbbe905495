"""A worker container whose host socket folder was removed while it served (a tmp cleaner
such as systemd-tmpfiles on a days-long run, ``rm -rf $TMPDIR/*``) keeps serving; once it
dies, its replacement must start in a folder made again, as a process worker's does, instead
of every restart failing with FileNotFoundError (training crashed, and every reset after)."""

from __future__ import annotations

import os
import shutil
import subprocess

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.conftest import require_docker

pytestmark = pytest.mark.docker


def test_a_dead_worker_whose_folder_was_removed_is_replaced() -> None:
    require_docker()
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="docker", envs_per_worker=1)
    try:
        envs.reset(seed=0)
        worker = envs.unwrapped.workers[0]
        folder = worker.folder
        shutil.rmtree(folder)
        subprocess.run(["docker", "kill", worker.container_id], check=True, capture_output=True,
                       timeout=60)
        _, _, _, truncated, infos = envs.step({"message": ("a", "b")})
        assert truncated.tolist() == [True, False] and infos["worker_restarted"][0]
        assert worker.alive() and worker.restarts == 1
        envs.step({"message": ("c", "d")})  # NEXT_STEP: env 0 starts its fresh episode
        obs, *_ = envs.step({"message": ("e", "f")})
        assert list(obs["echo"]) == ["e", "f"]
    finally:
        envs.close()
    assert not os.path.exists(folder)
