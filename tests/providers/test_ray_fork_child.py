"""A process forked from one that had used Ray (AsyncVectorEnv's forked workers, a DataLoader
worker) gets a typed error at once from a provider="ray" env, instead of hanging for good in
ray.init or ray.nodes (Ray's connections do not survive a fork); and a fork's copy of a Ray
env fails its calls at once, where each waited on Ray's dead connection (10 s a step)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("ray")

_TRAINER = """
import os, sys, time, gymnasium as gym, ray, openenv_gym

OPTIONS = {"num_cpus": 0.25, "address": "local", "init_kwargs": {"num_cpus": 1}}

def in_a_fork(job):
    pid = os.fork()
    if pid == 0:
        start = time.monotonic()
        try:
            job()
            print("no error", flush=True)
        except openenv_gym.ProviderUnavailableError as exc:
            print("refused in %.1f s:" % (time.monotonic() - start), exc, flush=True)
        except openenv_gym.WorkerError as exc:
            print("failed in %.1f s:" % (time.monotonic() - start), repr(str(exc)), flush=True)
        except BaseException as exc:  # uncaught, Ray's excepthook would hang the fork
            print("raised", type(exc).__name__, exc, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)

# Ray started and shut down by the parent (as AsyncVectorEnv's first env does), then a fork.
env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS)
env.reset(seed=0)
env.close()
print("ray left running:", ray.is_initialized(), flush=True)
in_a_fork(lambda: gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS))

# The user's own ray.init, live: a fork of it, and a fork's copy of a live env whose worker died.
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
in_a_fork(lambda: gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"num_cpus": 0.25}))
env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"num_cpus": 0.25})
env.reset(seed=0)
os.kill(env.unwrapped.worker.pid, 9)
time.sleep(0.5)
in_a_fork(lambda: env.reset())
env.close()
ray.shutdown()
"""


def test_ray_in_a_fork_of_a_ray_user_is_refused_at_once() -> None:
    out = subprocess.run([sys.executable, "-c", _TRAINER], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith(("refused", "failed", "no error", "raised"))]
    assert "ray left running: False" in out.stdout, out.stdout
    assert len(lines) == 3, out.stdout + out.stderr[-3000:]
    for line in lines[:2]:
        assert line.startswith("refused in 0.") and "forked from one that had used Ray" in line, line
    assert lines[2].startswith("failed in 0."), lines[2]  # not 10 s on Ray's dead connection
    # Its log tail says why there is none: this fork cannot use Ray (not that Ray was shut down).
    assert "(logs unavailable: this process was forked from one that had used Ray" in lines[2], lines[2]
