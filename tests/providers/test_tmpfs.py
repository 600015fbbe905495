"""A process worker of an untrusted env keeps its sandboxes in a private tmpfs (as root).

Real mounts in a real mount namespace; skipped (with the reason) where this process is not
root, since mounting needs it.
"""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers import _tmpfs
from openenv_gym.providers._docker_hardening import HARDENING
from openenv_gym.providers.process import ProcessProvider


def _mounts(pid: int | str = "self") -> list[str]:
    with open(f"/proc/{pid}/mountinfo") as f:
        return f.read().splitlines()


def test_options_follow_docker() -> None:
    assert _tmpfs.tmpfs_options("rw,nosuid,nodev,size=64m") == (0x2 | 0x4 | 0x8, "size=64m,mode=0700")
    flags, data = _tmpfs.tmpfs_options("rw,nosuid,nodev,exec,size=256m,uid=10001,mode=1777")
    assert flags == 0x2 | 0x4 and data == "size=256m,uid=10001,mode=1777"  # exec lifts noexec


root_only = pytest.mark.skipif(not _tmpfs.support()[0], reason=f"no private tmpfs here: {_tmpfs.support()[1]}")


@root_only
def test_an_untrusted_worker_keeps_its_sandboxes_in_a_tmpfs_only_it_sees() -> None:
    env = gym.make("OpenEnv/Coding-v0", provider="process")
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        assert worker.tmpfs == HARDENING["tmpfs"]["/tmp"]
        obs, *_ = env.step({"code": "import os\nopen('mine.txt', 'w').write('x')\nprint(os.getcwd())"})
        sandbox = obs["stdout"].strip()
        assert sandbox.startswith(worker.tmp_path + os.sep), sandbox
        theirs = [m for m in _mounts(worker.pid) if f" {worker.tmp_path} " in m]
        assert len(theirs) == 1 and " - tmpfs " in theirs[0] and "size=65536k" in theirs[0], theirs
        assert "nr_inodes=65536" in theirs[0], theirs  # files bounded too, as in a container
        assert "noexec" in theirs[0].split(" - ")[0]  # as Docker mounts its /tmp
        # The host sees the empty mount point: neither the mount nor the sandbox.
        assert not [m for m in _mounts() if f" {worker.tmp_path} " in m]
        assert os.listdir(worker.tmp_path) == [] and not os.path.exists(os.path.join(sandbox, "mine.txt"))
        pid, folder = worker.pid, worker.tmp_path
        os.kill(pid, signal.SIGKILL)  # the namespace, and so the files, die with the worker
        worker.proc.wait()
        assert not [m for m in _mounts() if f" {folder} " in m]
    finally:
        env.close()
    assert not os.path.exists(folder)


@root_only
def test_trusted_envs_and_private_tmp_false_get_none() -> None:
    provider = ProcessProvider()
    [echo] = provider.start("echo")
    [coding] = ProcessProvider(private_tmp=False).start("coding")
    try:
        for worker in (echo, coding):
            assert worker.tmpfs is None
            assert not [m for m in _mounts(worker.pid) if worker.tmp_path in m]
        assert not os.path.exists(echo.tmp_path)
        # Coding's sandboxes stay in its worker's folder all the same (plain disk, no mount).
        assert os.path.isdir(coding.tmp_path)
    finally:
        provider.stop_all([echo, coding])
