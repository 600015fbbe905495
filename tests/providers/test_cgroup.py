"""Process workers of untrusted envs in cgroups of their own: limits, and a clean end.

Real cgroups on this machine's cgroup file system; skipped (with the reason) only where
the machine gives us none, as ``openenv-gym doctor`` reports.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.transport import BinaryClient
from openenv_gym.providers import _cgroup
from openenv_gym.providers._docker_hardening import HARDENING
from openenv_gym.providers.process import ProcessProvider
from tests.security.helpers import wait_until

SUPPORTED, REASON = _cgroup.support()
pytestmark = pytest.mark.skipif(not SUPPORTED, reason=f"no cgroups for workers here: {REASON}")


def _cgroup_line(pid: int, controller: str = "pids") -> str:
    with open(f"/proc/{pid}/cgroup") as f:
        lines = [line.strip() for line in f if controller in line.split(":")[1].split(",") or
                 (line.startswith("0::") and controller == "")]
    return lines[0] if lines else ""


def test_an_untrusted_worker_gets_the_docker_limits_and_a_trusted_one_none() -> None:
    provider = ProcessProvider()
    [coding] = provider.start("coding")
    [echo] = provider.start("echo")
    try:
        group = coding.cgroup
        assert group is not None
        assert coding.pid in group.pids()
        assert group.limit("pids") == HARDENING["pids_limit"] == 128
        assert group.limit("memory") == 1 << 30  # HARDENING's "1g"
        assert _cgroup.PREFIX in _cgroup_line(coding.pid)
        assert echo.cgroup is None and _cgroup.PREFIX not in _cgroup_line(echo.pid)
    finally:
        provider.stop_all([coding, echo])
    assert not any(os.path.exists(folder) for folder in group.folders.values())


def test_container_options_set_the_limits_and_an_oom_kill_is_named_in_the_logs() -> None:
    env = gym.make("OpenEnv/Coding-v0", provider="process",
                   provider_options={"container_options": {"mem_limit": "200m", "pids_limit": 64}})
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        assert worker.cgroup.limit("memory") == 200 << 20 and worker.cgroup.limit("pids") == 64
        assert "OOM" not in worker.logs()
        # Under the child's RLIMIT_AS (1 GiB), over the cgroup's 200 MiB: the kernel's OOM killer.
        obs, *_ = env.step({"code": "blocks = [bytearray(32 << 20) for _ in range(12)]\nprint('survived')"})
        assert "survived" not in obs["stdout"] and obs["exit_code"] != 0, obs
        assert worker.cgroup.oom_kills() >= 1
        assert "OOM-killed" in worker.logs() and "'mem_limit'" in worker.logs()
        obs, *_ = env.step({"code": "print(6 * 7)"})  # the worker lives on
        assert obs["stdout"] == "42\n"
    finally:
        env.close()


def test_cgroups_false_turns_them_off() -> None:
    provider = ProcessProvider(cgroups=False)
    [worker] = provider.start("coding")
    try:
        assert worker.cgroup is None and _cgroup.PREFIX not in _cgroup_line(worker.pid)
    finally:
        provider.stop_all([worker])


def _sleeping_step(worker) -> tuple[BinaryClient, int]:
    """Start a Git step that sleeps; return the client and the sleeping command's pid."""
    client = BinaryClient(worker.address, timeout=30.0)
    sid = client.request({"op": "reset"})["sid"]
    client.send({"op": "step", "sid": sid, "action": {"command": "exec sleep 600", "timeout": 100}})
    found: list[int] = []

    def sleeping() -> bool:
        for pid in worker.cgroup.pids():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[:2] == [b"sleep", b"600"]:
                        found.append(pid)
                        return True
            except OSError:
                pass
        return False

    assert wait_until(sleeping, 10, 0.02), worker.cgroup.pids()
    return client, found[0]


def test_stopping_a_crashed_worker_ends_the_step_it_left_running() -> None:
    # Spawned, not forked: a fork server, the subreaper of its workers' descendants, would end
    # the step itself within a second (tests/providers/test_killed_worker_leaves_no_child.py);
    # here the cgroup is what must end it.
    provider = ProcessProvider(fork=False)
    [worker] = provider.start("git")
    group = worker.cgroup
    try:
        client, sleeper = _sleeping_step(worker)
        os.kill(worker.pid, signal.SIGKILL)  # a crash mid-step: nobody is left to end the step
        worker.proc.wait()
        client.drop()
        time.sleep(0.2)
        assert os.path.exists(f"/proc/{sleeper}") and not _zombie(sleeper), "the step should outlive its worker"
    finally:
        provider.stop_all([worker])
    assert wait_until(lambda: not os.path.exists(f"/proc/{sleeper}") or _zombie(sleeper), 10, 0.02)
    assert not any(os.path.exists(folder) for folder in group.folders.values())


def test_a_restart_ends_what_the_old_worker_left() -> None:
    provider = ProcessProvider()
    [worker] = provider.start("git")
    try:
        client, sleeper = _sleeping_step(worker)
        os.kill(worker.pid, signal.SIGKILL)
        client.drop()
        worker.restart()
        assert not os.path.exists(f"/proc/{sleeper}") or _zombie(sleeper)
        assert worker.cgroup is not None and worker.cgroup.pids() == [worker.pid]
    finally:
        provider.stop_all([worker])


def _dead_owners_cgroup(name: str) -> _cgroup.WorkerCgroup:
    """A cgroup named for an owner that no longer runs (as one killed before it cleaned up):
    ``name`` is what follows the owner in the name (``-ptest-w0``, or ``@<pidns>-...``)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    version, bases = _cgroup._bases()
    entry = f"{_cgroup.PREFIX}{gone.pid}{name}"
    group = _cgroup.WorkerCgroup(version, {c: os.path.join(base, entry) for c, base in bases.items()})
    for folder in set(group.folders.values()):
        os.makedirs(folder)
    return group


def test_the_cgroup_of_an_owner_killed_before_it_could_clean_up_is_reaped() -> None:
    group = _dead_owners_cgroup("-ptest-w0")
    orphan = subprocess.Popen(["sleep", "600"])
    try:
        group.add(orphan.pid)
        assert group.pids() == [orphan.pid]
        assert _cgroup.reap_stale() >= 1  # others too, if earlier tests killed their owners
        assert orphan.wait(timeout=5) == -signal.SIGKILL
        assert not any(os.path.exists(folder) for folder in group.folders.values())
    finally:
        orphan.kill()
        orphan.wait()
        group.kill()
        group.remove()


def test_a_worker_whose_owner_was_killed_removes_its_cgroup() -> None:
    owner = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        from openenv_gym.providers.process import ProcessProvider
        [worker] = ProcessProvider().start("coding")
        print(worker.pid, *sorted(set(worker.cgroup.folders.values())), flush=True)
        input()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid, *folders = owner.stdout.readline().split()
        assert folders and all(os.path.isdir(f) for f in folders)
        owner.kill()  # SIGKILL: the owner cleans up nothing
        owner.wait()
        assert wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 20, 0.02), "the worker outlived its owner"
        assert not any(os.path.exists(f) for f in folders)
    finally:
        owner.kill()
        owner.wait()


def test_a_live_owners_cgroup_is_left_alone() -> None:
    group = _cgroup.WorkerCgroup.create("ptest-live", pids=8, memory_bytes=None)
    assert group is not None
    try:
        assert _cgroup.reap_stale() == 0
        assert all(os.path.isdir(folder) for folder in group.folders.values())
    finally:
        group.remove()


def test_the_pids_limit_binds() -> None:
    group = _cgroup.WorkerCgroup.create("ptest-pids", pids=5, memory_bytes=None)
    assert group is not None
    proc = subprocess.Popen(["sh", "-c", "read _; for i in 1 2 3 4 5 6 7 8; do sleep 600 & done; wait"],
                            stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        group.add(proc.pid)
        proc.stdin.close()  # go: the shell forks only now, inside the cgroup
        assert wait_until(lambda: len(group.pids()) >= 4, 10, 0.02), group.pids()
        time.sleep(0.3)
        with open(os.path.join(group.folders["pids"], "pids.current")) as f:
            assert int(f.read()) <= 5
        assert len(group.pids()) <= 5  # the shell and at most 4 sleeps of the 8 it asked for
    finally:
        assert group.kill()
        proc.wait()
        group.remove()
    assert b"fork" in proc.stderr.read().lower()


def test_a_worker_that_cannot_join_its_cgroup_is_ended_with_a_clear_error() -> None:
    from openenv_gym.errors import WorkerError

    group = _cgroup.WorkerCgroup.create("ptest-gone", pids=8, memory_bytes=None)
    assert group is not None
    group.remove()  # the cgroup vanished under us (an admin, a cleanup tool)
    proc = subprocess.Popen(["sleep", "600"])
    try:
        with pytest.raises(WorkerError, match="could not put the worker into its cgroup.*'cgroups': False"):
            group.place(proc)
        assert proc.poll() is not None  # never left running unbounded
    finally:
        proc.kill()
        proc.wait()


def test_limits_reads_docker_notation() -> None:
    assert _cgroup.limits({"pids_limit": 64, "mem_limit": "512m"}) == (64, 512 << 20)
    assert _cgroup.limits({"mem_limit": 1 << 30}) == (None, 1 << 30)
    assert _cgroup.limits({}) == (None, None)


def _zombie(pid: int) -> bool:
    return _cgroup._zombie(pid)


def test_a_worker_cgroup_names_its_owners_pid_namespace() -> None:
    group = _cgroup.WorkerCgroup.create("ptest-ns", pids=8, memory_bytes=None)
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
        assert os.path.basename(group.folders["pids"]).startswith(
            f"{_cgroup.PREFIX}{os.getpid()}@{namespace}-")
    finally:
        group.remove()


@pytest.mark.skipif(os.getuid() != 0, reason="unshare --pid needs root")
def test_the_cgroup_of_an_owner_in_another_pid_namespace_is_not_reaped() -> None:
    # An owner in a container or under `unshare --pid` sharing this cgroup tree: its pid names
    # no process here, yet its workers run. Named the old way (pid only), its cgroup is known
    # by its processes' namespace; named the new way, by its name.
    sleeper = subprocess.Popen(["unshare", "--pid", "--fork", "sleep", "600"])
    groups = []
    try:
        groups += [_dead_owners_cgroup("-ptest-w0"), _dead_owners_cgroup("@1-ptest-w1")]
        assert wait_until(lambda: len(subprocess.run(["pgrep", "-P", str(sleeper.pid)], capture_output=True,
                                                     text=True).stdout.split()) == 1, 10, 0.02)
        inner = int(subprocess.run(["pgrep", "-P", str(sleeper.pid)], capture_output=True, text=True).stdout)
        groups[0].add(inner)
        _cgroup.reap_stale()
        assert sleeper.poll() is None and groups[0].pids() == [inner]
        assert all(os.path.isdir(f) for g in groups for f in g.folders.values())
    finally:
        sleeper.kill()
        sleeper.wait()
        for group in groups:
            group.kill()
            group.remove()


def test_a_stale_cgroup_this_user_may_not_end_does_not_fail_the_sweep(monkeypatch) -> None:
    # Root's stale cgroup seen by another user's trainer: kill() is refused (EPERM).
    group = _dead_owners_cgroup("-ptest-eperm")
    orphan = subprocess.Popen(["sleep", "600"])
    try:
        group.add(orphan.pid)

        def refuse(*_):
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(_cgroup.os, "kill", refuse)
        monkeypatch.setattr(_cgroup.os.path, "exists", lambda p, real=os.path.exists: (
            False if p.endswith("cgroup.kill") else real(p)))
        _cgroup.reap_stale()  # raised PermissionError
    finally:
        monkeypatch.undo()
        orphan.kill()
        orphan.wait()
        group.kill()
        group.remove()
