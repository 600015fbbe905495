"""Fault injection: killed and frozen workers, a killed trainer, a restarted Docker engine.

Workers are killed with SIGKILL (process) or ``docker kill`` and frozen with SIGSTOP or
``docker pause`` while a reset or a step is in flight, under a plain env, a vector env and
SB3 training. The trainer itself is killed with SIGKILL mid-training: nothing of ours may
be left (containers by owner label, worker processes by ``--owner-pid``, the sandbox's
children, socket files in the runtime folder, listening ports).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import OpenEnvError, WorkerError, WorkerTimeoutError
from tests.conftest import require_docker, stop_process
from tests.security import helpers
from tests.security.helpers import record

ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = ["process", pytest.param("docker", marks=pytest.mark.docker)]


def _need(provider: str) -> None:
    if provider == "docker":
        require_docker()


def _kill(worker: Any) -> str:
    if getattr(worker, "container_id", None):
        subprocess.run(["docker", "kill", worker.container_id], check=True, capture_output=True, timeout=60)
        return "docker kill"
    os.kill(worker.pid, signal.SIGKILL)
    return "SIGKILL"


def _freeze(worker: Any, on: bool) -> str:
    if getattr(worker, "container_id", None):
        subprocess.run(["docker", "pause" if on else "unpause", worker.container_id], check=True,
                       capture_output=True, timeout=60)
        return "docker pause"
    if on:  # the stop lands thread by thread: wait until every thread is stopped
        stop_process(worker.pid)
    else:
        os.kill(worker.pid, signal.SIGCONT)
    return "SIGSTOP"


# ------------------------------------------------------------------ during reset / step

@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("during", ["reset", "step"])
def test_worker_killed_mid_call_is_a_typed_error_then_recovers(provider: str, during: str) -> None:
    """A Coding env whose reset/step is in flight when the worker is killed."""
    _need(provider)
    env = gym.make("OpenEnv/Coding-v0", provider=provider, timeout=30.0)
    try:
        env.reset()
        base = helpers.sandbox_base(env)
        worker = env.unwrapped.worker
        # Keep the call in flight: a slow step; for reset, the previous step's child keeps
        # the session busy, so the reset waits on its lock.
        slow = {"code": "import time; time.sleep(5)", "timeout": 8}
        outcome: list[Any] = []

        def slow_step_running() -> None:
            # Not a fixed sleep: under load the step may take seconds to start, and a reset
            # sent before it holds the session would just succeed before the kill.
            assert helpers.wait_until(lambda: bool(helpers.processes_with_home_under(base)), 60, 0.05), \
                "the slow step's child never ran"

        if during == "step":
            call = lambda: env.step(slow)  # noqa: E731
        else:
            busy = threading.Thread(target=lambda: _swallow(lambda: env.unwrapped._client.__class__(
                worker.address, 30).request({"op": "step", "sid": env.unwrapped.session_id, "action": slow})))
            busy.start()
            slow_step_running()
            call = lambda: env.reset()  # noqa: E731
        t = threading.Thread(target=lambda: outcome.append(_swallow(call)))
        t.start()
        if during == "step":
            slow_step_running()
        else:
            time.sleep(0.5)  # most often the reset is then waiting on the lock (else it recovers)
        how = _kill(worker)
        t.join(30)
        assert not t.is_alive()
        if during == "reset" and not isinstance(outcome[0], Exception):
            # reset() itself replaces a worker that died under it: the caller sees a new episode.
            assert worker.restarts >= 1
            seen = "reset recovered by itself (worker replaced)"
        else:
            assert isinstance(outcome[0], WorkerError), outcome
            seen = type(outcome[0]).__name__
        start = time.monotonic()
        env.reset()
        obs, reward, *_ = env.step({"code": "print('back')"})
        took = time.monotonic() - start
        assert obs["stdout"] == "back\n" and worker.restarts >= 1
    finally:
        env.close()
    record("faults", f"{how} during {during}", "typed WorkerError (or a reset that recovers); next "
           "reset replaces the worker", f"{seen}; next episode OK after {took:.2f} s", provider)


def _swallow(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # the outcome is checked by the caller
        return exc


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("during", ["reset", "step"])
def test_worker_frozen_past_the_timeout_is_a_timeout_error(provider: str, during: str) -> None:
    _need(provider)
    env = gym.make("OpenEnv/Echo-v0", provider=provider, timeout=1.5)
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        how = _freeze(worker, True)
        try:
            start = time.monotonic()
            with pytest.raises(WorkerTimeoutError, match="did not answer"):
                env.reset() if during == "reset" else env.step({"message": "x"})
            waited = time.monotonic() - start
            assert waited < 1.5 + 5
        finally:
            _freeze(worker, False)
        env.reset(seed=1)
        assert env.step({"message": "thawed"})[0]["echo"] == "thawed"
    finally:
        env.close()
    record("faults", f"{how} past the timeout during {during}", "WorkerTimeoutError at the timeout",
           f"WorkerTimeoutError after {waited:.1f} s (timeout 1.5 s); works again once thawed", provider)


# ------------------------------------------------------------------ vector env under SB3

@pytest.mark.parametrize("provider", PROVIDERS)
def test_sb3_training_survives_killed_and_frozen_workers(provider: str) -> None:
    _need(provider)
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    from openenv_gym.sb3 import RemoteVecEnv

    venv = RemoteVecEnv("OpenEnv/Gym-v0", num_envs=4, provider=provider, envs_per_worker=2,
                        env_id="CartPole-v1", step_timeout=2.0)
    injected: list[str] = []

    class Saboteur(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps == 200:
                injected.append(_kill(venv.workers[0]))
            elif self.num_timesteps == 600:
                w = venv.workers[1]
                injected.append(_freeze(w, True))
                threading.Timer(4.0, lambda: _swallow(lambda: _freeze(w, False))).start()
            return True

    try:
        restarts_before = sum(w.restarts for w in venv.workers)
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
        model.learn(total_timesteps=1200, callback=Saboteur())
        assert model.num_timesteps >= 1200
        assert sum(w.restarts for w in venv.workers) - restarts_before >= 2
        obs = venv.reset()
        assert obs.shape == (4, 4) and np.isfinite(obs).all()
    finally:
        time.sleep(0.1)
        venv.close()
    for how in injected:
        record("faults", f"{how} of a worker during SB3 PPO training (vector env, 4 envs / 2 workers)",
               "training continues; worker replaced; its envs truncate",
               "PPO finished all 1200 steps; worker replaced", provider)


# ------------------------------------------------------------------ the trainer killed

_TRAINER = """
import os, sys, time
import gymnasium as gym, openenv_gym
from openenv_gym.sb3 import RemoteVecEnv
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
provider = sys.argv[1]
venv = RemoteVecEnv("OpenEnv/Gym-v0", num_envs=4, provider=provider, envs_per_worker=2,
                    env_id="CartPole-v1")
coding = gym.make("OpenEnv/Coding-v0", provider=provider, timeout=120)
coding.reset()
obs, *_ = coding.step({"code": "import os; print(os.getcwd())"})
print("sandbox", os.path.dirname(obs["stdout"].strip()), flush=True)
import threading
threading.Thread(target=lambda: coding.step({"code": "import time; time.sleep(600)", "timeout": 60}),
                 daemon=True).start()

class Ready(BaseCallback):
    def _on_step(self):
        if self.num_timesteps == 256:
            print("ready", flush=True)
        return True

PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, device="cpu").learn(10**7, callback=Ready())
"""


@pytest.mark.parametrize("provider", PROVIDERS)
def test_trainer_sigkilled_mid_training_leaves_nothing(provider: str) -> None:
    _need(provider)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    trainer = subprocess.Popen([sys.executable, "-c", _TRAINER, provider], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    client = helpers.docker_client() if provider == "docker" else None
    try:
        base = ""
        for line in trainer.stdout:
            if line.startswith("sandbox "):
                base = line.split(None, 1)[1].strip()
            if line.strip() == "ready":
                break
        assert base, trainer.stderr.read() if trainer.poll() is not None else "no sandbox line"
        # The sleeping Coding step's child: waited for, as a loaded machine may start it late.
        assert helpers.wait_until(lambda: bool(helpers.processes_with_home_under(base)), 60, 0.1), \
            "the sleeping step's child is not running"
        pid = trainer.pid
        before = {"workers": helpers.workers_of(pid),
                  "containers": helpers.our_containers(client, pid) if client else [],
                  "sandbox children": helpers.processes_with_home_under(base)}
        assert before["workers"] or before["containers"], before
        trainer.send_signal(signal.SIGKILL)
        trainer.wait(10)

        def left() -> dict[str, Any]:
            out = {"worker processes": helpers.workers_of(pid),
                   "fork servers": helpers.fork_servers_of(pid),
                   "fork server sentinels": helpers.sentinels_of(pid),
                   "sandbox children": helpers.processes_with_home_under(base),
                   "socket files": helpers.owned_runtime_entries(pid),
                   "listening ports": helpers.listening_ports(before["workers"])}
            if client:
                out["containers"] = [c.name for c in helpers.our_containers(client, pid)]
            return {k: v for k, v in out.items() if v}

        gone = helpers.wait_until(lambda: not left(), 30, 0.25)
        leftovers = left()
        for what, items in leftovers.items():
            helpers.leak(f"after the trainer's SIGKILL ({provider}): {what} {items}")
        assert gone, leftovers
    finally:
        if trainer.poll() is None:
            trainer.kill()
            trainer.wait()
        if client:
            client.close()
    n = len(before["workers"]) + len(before["containers"])
    record("faults", "SIGKILL of the trainer mid-training (SB3 PPO + a Coding step in flight)",
           "no container, worker process, sandbox child, socket file or port left",
           f"all {n} workers and the running child gone; 0 left", provider)
