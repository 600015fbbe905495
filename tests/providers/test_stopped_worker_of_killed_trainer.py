"""A trainer killed with SIGKILL while one of its process workers is stopped (SIGSTOP): the
stopped worker cannot notice, and its running sibling removes the pool's folder on its way
out, so the next trainer's sweep of dead owners' folders found nothing and the stopped worker
lived on for good (README: it "is ended by the next trainer's sweep")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import stop_process

TRAINER = """
import gymnasium as gym, openenv_gym
envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=1)
envs.reset(seed=0)
print(*(w.pid for w in envs.unwrapped.workers), envs.unwrapped.workers[0].folder, flush=True)
import time; time.sleep(600)
"""

NEXT_TRAINER = """
import gymnasium as gym, openenv_gym
env = gym.make("OpenEnv/Echo-v0", provider="process"); env.reset(); env.close()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_next_trainer_ends_a_stopped_worker_of_a_killed_trainer(procs) -> None:
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER], stdout=subprocess.PIPE, text=True)
    stopped = None
    try:
        first, second, folder = trainer.stdout.readline().split()
        stopped, running = int(first), int(second)
        stop_process(stopped)
        trainer.kill()
        trainer.wait(30)
        # The running worker notices its owner is gone, exits, and removes the pool's folder.
        assert not procs.wait_gone({running}, 30.0)
        deadline = time.monotonic() + 30
        while os.path.exists(folder) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not os.path.exists(folder) and procs.running({stopped})  # stopped, not gone
        subprocess.run([sys.executable, "-c", NEXT_TRAINER], check=True, timeout=120)
        assert not procs.wait_gone({stopped}, 10.0), "the stopped worker lives on"
    finally:
        trainer.kill()
        if stopped is not None and procs.running({stopped}):
            os.kill(stopped, signal.SIGKILL)
