"""A local Ray the provider started that loses its raylet or GCS, or an actor that hangs at
close: typed errors, no blocked close, and the provider-started Ray shut down after the last
env (a fresh one for the next env).

Each case runs in a child Python: a Ray that lost its GCS ends its driver process a minute
later, which must not be pytest's. Runs without the shared cluster (``address="local"``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ray")

_PRELUDE = """
import os, signal, time
import gymnasium as gym, ray
import openenv_gym
from openenv_gym.errors import ProviderUnavailableError

OPTS = {"address": "local", "num_cpus": 0.25, "init_kwargs": {"num_cpus": 2}}

def ray_pid(kind):
    return ray._private.worker._global_node.all_processes[kind][0].process.pid

def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True

envs = gym.make_vec("OpenEnv/Gym-v0", env_id="CartPole-v1", num_envs=2, envs_per_worker=1,
                    provider="ray", step_timeout=30, provider_options=OPTS)
envs.reset(seed=0)
"""

_AFTER = """
assert not ray.is_initialized(), "the provider-started Ray was left running"
env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider="ray", provider_options=OPTS)
env.reset(seed=0)
env.close()
assert not ray.is_initialized()
print("OK")
"""


def _run(body: str) -> subprocess.CompletedProcess[str]:
    code = _PRELUDE + textwrap.dedent(body) + _AFTER
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=400, env=env)


@pytest.mark.parametrize("kind", ["raylet", "gcs_server"])
def test_a_ray_that_lost_a_core_process_gives_a_typed_error_and_is_replaced(kind) -> None:
    proc = _run(f"""
        os.kill(ray_pid({kind!r}), signal.SIGKILL)
        os.kill(envs.workers[0].pid, signal.SIGKILL)   # its worker must be replaced now
        time.sleep(1)
        try:
            for _ in range(20):
                envs.step(envs.action_space.sample())
            raise SystemExit("no error after the Ray lost its {kind}")
        except ProviderUnavailableError as exc:
            assert {kind!r} in str(exc), exc
        envs.close()
    """)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]


def test_a_hung_actor_at_close_does_not_leave_the_provider_started_ray_running() -> None:
    proc = _run("""
        actor = envs.workers[1].actor_pid
        os.kill(actor, signal.SIGSTOP)       # a hung actor: the data plane still serves
        envs.step(envs.action_space.sample())
        envs.close()
        assert gone(actor)
    """)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]
