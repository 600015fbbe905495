"""Ctrl-C while the provider starts a local Ray leaves no Ray behind and no broken state.

``ray.init`` is not safe to interrupt: a KeyboardInterrupt inside it left its GCS and raylet
(and agents) running with nothing that knew them, until the process exited, and when it
landed after the core worker was made, the next ``gym.make`` aborted the whole process
(Ray's "The process is already initialized for core worker" check).
"""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)

ray = pytest.importorskip("ray")
node = pytest.importorskip("ray._private.node")

OPTIONS = {"address": "local", "num_cpus": 0.5, "init_kwargs": {"num_cpus": 2}}


@pytest.mark.parametrize("step", ["start_raylet"])  # the GCS already runs: a leak if cut here
def test_ctrl_c_during_the_ray_start_leaves_no_ray_and_the_next_make_works(procs, monkeypatch, step) -> None:
    if ray.is_initialized():
        ray.shutdown()
    if not hasattr(node.Node, step):
        pytest.skip(f"this Ray has no Node.{step} to interrupt")
    original = getattr(node.Node, step)

    def interrupted(self, *args, **kwargs):  # the user presses Ctrl-C right here
        os.kill(os.getpid(), signal.SIGINT)
        return original(self, *args, **kwargs)

    before = procs.descendants(os.getpid())
    monkeypatch.setattr(node.Node, step, interrupted)
    with pytest.raises(KeyboardInterrupt):
        gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS)
    monkeypatch.undo()
    assert not ray.is_initialized()
    started = procs.descendants(os.getpid()) - before
    cores = procs.ray_cores(started)
    assert not procs.wait_gone(cores, 20), "the interrupted start left Ray running"

    env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS)
    try:
        env.reset(seed=0)
        assert env.step({"message": "again"})[0]["echo"] == "again"
    finally:
        env.close()
    assert not ray.is_initialized()
    assert not procs.wait_gone(procs.descendants(os.getpid()) - before, 20)
