"""Engine-level trouble with a live worker container: ``docker pause``, ``docker kill`` and
``docker stop`` by the user, and Docker's sticky ``State.OOMKilled``.

A call to a paused worker times out naming the pause (learnt on the timeout only), and a
``docker kill`` (exit 137 without ``OOMKilled``) is told as a SIGKILL, not a bare exit code.

Docker sets ``OOMKilled`` on any OOM kill in a container, such as a Coding-v0 sandbox
child's (the child is the OOM killer's first choice, so the worker lives on). A worker
stopped later by ``docker stop`` (exit 0) was then reported "OOM-killed (exit 0): raise
container_options mem_limit", sending the user after the wrong fix.
"""

from __future__ import annotations

import os
import subprocess

import docker
import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import ResetNeededError, WorkerError, WorkerTimeoutError
from openenv_gym.providers._docker_owner import LABEL_OWNER_PID
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

#: Coding-v0 code whose sandbox child grows past the container's memory limit.
_GROW = "blocks = []\nwhile True:\n    blocks.append(bytearray(32 << 20))\n"


def _ours(client: docker.DockerClient) -> list[str]:
    """Ids of the worker containers this test process owns, in any state."""
    mine = {"label": f"{LABEL_OWNER_PID}={os.getpid()}"}
    return [c.id for c in client.containers.list(all=True, filters=mine)]


def _gone(client: docker.DockerClient, container_id: str) -> bool:
    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return True
    return False


def test_a_paused_worker_times_out_and_is_removed_not_left_paused() -> None:
    require_docker()
    client = docker.from_env()
    try:
        env = gym.make("OpenEnv/Echo-v0", provider="docker", timeout=3)
        try:
            env.reset(seed=0)
            worker = env.unwrapped.worker
            paused = worker.container_id
            client.containers.get(paused).pause()
            with pytest.raises(WorkerTimeoutError) as timed_out:
                env.step({"message": "frozen"})
            # What is known of the worker, learnt on the timeout, and what to do about it.
            assert "the worker's state: paused (frozen by `docker pause`" in str(timed_out.value)
            assert str(timed_out.value).endswith("call reset(), which replaces the worker")
            with pytest.raises(ResetNeededError, match="replaces the worker"):
                env.step({"message": "again"})
            _, info = env.reset()
            assert info["worker_restarted"] and worker.last_exit.startswith("paused"), worker.last_exit
            assert _gone(client, paused)
            assert env.step({"message": "thawed"})[0]["echo"] == "thawed"
            client.containers.get(worker.container_id).pause()  # close() must not wait on it
        finally:
            env.close()
        envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="docker", envs_per_worker=1,
                            step_timeout=3, on_worker_error="restart")
        try:
            envs.reset(seed=0)
            paused = envs.workers[0].container_id
            client.containers.get(paused).pause()
            _, _, _, truncated, infos = envs.step({"message": ("a", "b")})
            assert truncated.tolist() == [True, False] and infos["worker_restarted"][0]
            assert "paused" in infos["worker_error"][0]
            assert _gone(client, paused)
        finally:
            envs.close()
        assert _ours(client) == []
    finally:
        client.close()


def test_a_killed_worker_is_said_to_be_killed_by_sigkill() -> None:
    require_docker()
    client = docker.from_env()
    env = gym.make("OpenEnv/Echo-v0", provider="docker", timeout=30)
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        killed = worker.container_id
        client.containers.get(killed).kill()  # SIGKILL, no OOM: Docker's OOMKilled stays false
        assert not client.api.inspect_container(killed)["State"]["OOMKilled"]
        with pytest.raises(WorkerError) as failed:
            env.step({"message": "gone"})
        assert "stopped: killed by SIGKILL (exit 137: `docker kill`" in str(failed.value), failed.value
        _, info = env.reset()
        assert info["worker_restarted"] and worker.last_exit.startswith("killed by SIGKILL"), worker.last_exit
    finally:
        env.close()
        client.close()


def test_a_worker_stopped_after_its_sandbox_child_was_oom_killed_is_not_called_oom_killed() -> None:
    require_docker()
    client = docker.from_env()
    env = gym.make("OpenEnv/Coding-v0", provider="docker", timeout=30,
                   provider_options={"container_options": {"mem_limit": "200m"}})
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        obs, *_ = env.step({"code": _GROW})
        assert int(obs["exit_code"]) == -9 and worker.alive()  # the child went, not the worker
        stopped = worker.container_id
        client.containers.get(stopped).stop(timeout=10)
        state = client.api.inspect_container(stopped)["State"]
        assert state["OOMKilled"] and state["ExitCode"] == 0, state  # Docker's sticky flag
        with pytest.raises(WorkerError) as failed:
            env.step({"code": "print(1)"})
        assert "stopped from outside" in str(failed.value), failed.value
        assert "OOM-killed (exit" not in str(failed.value), failed.value
        _, info = env.reset()
        assert info["worker_restarted"] and _gone(client, stopped)
        assert worker.last_exit.startswith("exited with code 0 (stopped from outside"), worker.last_exit
        assert "OOM-killed earlier" in worker.last_exit
    finally:
        env.close()
        client.close()
    assert worker.restarts == 1


def test_a_worker_docker_killed_after_its_sandbox_child_was_oom_killed_is_not_called_oom_killed() -> None:
    # Docker's OOMKilled stays set from the child's OOM kill, and a `docker kill` ends the
    # worker with 137 as an OOM kill would: the engine's event log tells the two apart.
    require_docker()
    client = docker.from_env()
    env = gym.make("OpenEnv/Coding-v0", provider="docker", timeout=30,
                   provider_options={"container_options": {"mem_limit": "200m"}})
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        obs, *_ = env.step({"code": _GROW})
        assert int(obs["exit_code"]) == -9  # the child went, not the worker
        killed = worker.container_id
        client.containers.get(killed).kill()
        state = client.api.inspect_container(killed)["State"]
        assert state["OOMKilled"] and state["ExitCode"] == 137, state
        with pytest.raises(WorkerError) as failed:
            env.step({"code": "print(1)"})
        text = str(failed.value)
        assert "stopped: killed by SIGKILL from the Docker engine (exit 137: `docker kill`" in text, text
        assert "OOM-killed at" not in text and "OOM-killed earlier" in text, text
        _, info = env.reset()
        assert info["worker_restarted"] and worker.last_exit.startswith("killed by SIGKILL"), worker.last_exit
        assert "OOM-killed at" not in worker.last_exit, worker.last_exit
    finally:
        env.close()
        client.close()


def test_a_worker_oom_killed_itself_is_said_to_be_oom_killed() -> None:
    require_docker()
    env = gym.make("OpenEnv/Echo-v0", provider="docker", timeout=30,
                   provider_options={"container_options": {"mem_limit": "160m"}})
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        # The server made the OOM killer's first choice, then memory filled by another process.
        script = ("import glob\n"
                  "for p in glob.glob('/proc/[0-9]*/cmdline'):\n"
                  "    if open(p, 'rb').read().startswith(b'python\\0-m\\0openenv_gym.server\\0'):\n"
                  "        open(p.replace('cmdline', 'oom_score_adj'), 'w').write('1000')\n"
                  "blocks = []\n"
                  "while True:\n"
                  "    blocks.append(bytearray(16 << 20))\n")
        subprocess.run(["docker", "exec", "-u", worker.run_options["user"], worker.container_id,
                        "python", "-c", script], capture_output=True, timeout=120)
        with pytest.raises(WorkerError) as failed:
            env.step({"message": "lost"})
        assert "stopped: OOM-killed at its mem_limit" in str(failed.value), failed.value
        _, info = env.reset()
        assert info["worker_restarted"] and worker.last_exit.startswith("OOM-killed at"), worker.last_exit
    finally:
        env.close()


def test_a_worker_restarted_by_docker_restart_is_said_to_be_restarted() -> None:
    # The restart ends the server and its sessions; the one it starts again is no worker of
    # ours (it fails on the socket folder, closed to writes). Seen at any point of that.
    require_docker()
    client = docker.from_env()
    env = gym.make("OpenEnv/Echo-v0", provider="docker", timeout=30)
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        restarted = worker.container_id
        client.containers.get(restarted).restart(timeout=5)
        with pytest.raises(WorkerError) as failed:
            env.step({"message": "gone"})
        assert "The worker stopped: restarted from outside (`docker restart`" in str(failed.value), failed.value
        _, info = env.reset()
        assert info["worker_restarted"] and _gone(client, restarted)
        assert worker.last_exit.startswith("restarted from outside (`docker restart`"), worker.last_exit
        assert env.step({"message": "again"})[0]["echo"] == "again"
    finally:
        env.close()
        client.close()
    assert worker.restarts == 1
