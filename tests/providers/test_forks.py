"""Process workers forked from a fork server: they serve, report how they ended, and stay apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import InvalidRequestError
from openenv_gym.providers import _forks
from openenv_gym.providers.base import wait_ready
from openenv_gym.providers._runtime import worker_environ
from openenv_gym.providers.process import ProcessProvider
from tests.security.helpers import cmdline, environ, proc_status

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="forking needs pidfds (Linux 5.3+)")


def _ppid(pid: int) -> int:
    return int(proc_status(pid)["PPid"])


def _echo(worker) -> str:
    client = BinaryClient(worker.address)
    try:
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        return client.request({"op": "step", "sid": sid, "action": {"message": "hi"}})["obs"]["echo"]
    finally:
        client.close()


def test_workers_are_forked_by_one_server_and_read_as_spawned_ones() -> None:
    provider = ProcessProvider()
    workers = provider.start("echo", 2)
    try:
        parents = {_ppid(w.pid) for w in workers}
        assert len(parents) == 1, "both come from one fork server"
        [server] = parents
        assert server != os.getpid()
        assert b"openenv_gym.server.forkserver" in cmdline(server)
        for w in workers:
            assert isinstance(w.proc, _forks.ForkedProcess)
            assert _echo(w) == "hi"
            # ps shows what a spawned worker shows, so tools (and these tests) find it by owner.
            args = [a for a in cmdline(w.pid) if a]
            assert args[1:4] == [b"-m", b"openenv_gym.server", b"echo"], args
            assert args[args.index(b"--owner-pid") + 1] == str(os.getpid()).encode()
        spawned = ProcessProvider(fork=False).start("echo")
        try:
            assert _ppid(spawned[0].pid) == os.getpid() and _echo(spawned[0]) == "hi"
        finally:
            provider.stop_all(spawned)
    finally:
        provider.stop_all(workers)


def test_how_a_forked_worker_ended_is_reported() -> None:
    provider = ProcessProvider()
    [worker] = provider.start("echo")
    try:
        os.kill(worker.pid, signal.SIGKILL)
        assert worker.proc.wait(10) == -signal.SIGKILL
        assert worker.exit_reason() == "killed by signal 9 (SIGKILL)"
    finally:
        provider.stop_all([worker])
    # One that fails at start: its error reaches the trainer, typed.
    with pytest.raises(InvalidRequestError, match="no_such_option"):
        provider.start("echo", env_kwargs={"no_such_option": 1})


def test_workers_with_another_environment_come_from_another_server(monkeypatch) -> None:
    provider = ProcessProvider()
    [plain] = provider.start("echo")
    monkeypatch.setenv("OPENENV_GYM_TEST_MARK", "marked")
    [marked] = provider.start("echo")
    try:
        assert _ppid(plain.pid) != _ppid(marked.pid)
        assert environ(marked.pid).get(b"OPENENV_GYM_TEST_MARK") == b"marked"
        assert b"OPENENV_GYM_TEST_MARK" not in environ(plain.pid)
    finally:
        provider.stop_all([plain, marked])


def test_a_killed_fork_server_costs_only_exit_statuses() -> None:
    provider = ProcessProvider()
    [worker] = provider.start("echo")
    try:
        server = _ppid(worker.pid)
        os.kill(server, signal.SIGKILL)
        assert _echo(worker) == "hi", "its workers serve on"
        [fresh] = provider.start("echo")  # a new server takes over
        try:
            assert _ppid(fresh.pid) not in (server, os.getpid()) and _echo(fresh) == "hi"
        finally:
            provider.stop_all([fresh])
        worker.proc.kill()
        worker.proc.wait(10)
        assert worker.exit_reason().startswith("exited (its exit status was lost")
    finally:
        provider.stop_all([worker])


_FORKED_OWNER = """
import os, sys
from openenv_gym.providers._runtime import worker_environ
from openenv_gym.providers.process import ProcessProvider
provider = ProcessProvider()
[first] = provider.start("echo")
server = int(open(f"/proc/{first.pid}/status").read().split("PPid:")[1].split()[0])
child = os.fork()
if child == 0:  # a fork of the owner (multiprocessing's default): it must start its own server
    [mine] = provider.start("echo")
    mine_server = int(open(f"/proc/{mine.pid}/status").read().split("PPid:")[1].split()[0])
    print("child", mine_server != server, os.getppid() != mine_server, flush=True)
    provider.stop_all([mine])
    os._exit(0)
os.waitpid(child, 0)
[second] = provider.start("echo")  # the owner's server still answers it
second_server = int(open(f"/proc/{second.pid}/status").read().split("PPid:")[1].split()[0])
print("owner", second_server == server, flush=True)
provider.stop_all([first, second])
"""


def test_a_fork_of_the_owner_does_not_share_its_server() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", _FORKED_OWNER], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["child True True", "owner True"], out.stdout + out.stderr


def test_a_request_too_large_for_one_message_is_spawned_and_spares_the_server(tmp_path) -> None:
    provider = ProcessProvider()
    [worker] = provider.start("echo")
    try:
        server = _ppid(worker.pid)
        huge = ["echo", "--unix", str(tmp_path / "w.sock"), "--env-kwargs", '{"x": "' + "x" * (100 << 10) + '"}']
        servers = dict(_forks._servers)
        assert _forks.spawn(huge, str(tmp_path / "w.log"), worker_environ(trainer_path=True)) is None  # the caller spawns
        assert _forks._servers == servers
        [after] = provider.start("echo")
        try:
            assert _ppid(after.pid) == server, "the server that refused it still forks"
        finally:
            provider.stop_all([after])
    finally:
        provider.stop_all([worker])


def test_fork_servers_are_bounded_least_recently_used_first(monkeypatch) -> None:
    _forks.shutdown()  # start from none
    provider = ProcessProvider()
    workers = []
    try:
        monkeypatch.setenv("OPENENV_GYM_TEST_MARK", "0")
        workers += provider.start("echo")
        first = _ppid(workers[0].pid)
        for i in range(1, _forks.MAX_SERVERS + 1):  # one environment more than servers kept
            monkeypatch.setenv("OPENENV_GYM_TEST_MARK", str(i))
            workers += provider.start("echo")
        servers = {_ppid(w.pid) for w in workers[1:]}
        assert len(servers) == _forks.MAX_SERVERS and first not in servers
        assert len(_forks._servers) <= _forks.MAX_SERVERS
        assert not os.path.exists(f"/proc/{first}"), "the least recently used server was stopped"
        assert _echo(workers[0]) == "hi", "its worker serves on"
    finally:
        provider.stop_all(workers)


def test_a_held_worker_runs_nothing_until_released(tmp_path) -> None:
    # How an untrusted env's worker is started: it waits until its owner has put it in its
    # cgroup (before_run), so nothing it starts can begin outside; never released, it exits.
    def held(name: str, while_held: Callable[[_forks.ForkedProcess], None]) -> tuple[_forks.ForkedProcess, Path]:
        sock = tmp_path / f"{name}.sock"
        argv = ["echo", "--unix", str(sock), "--owner-pid", str(os.getpid()), "--idle-timeout", "0"]
        proc = _forks.spawn(argv, str(tmp_path / f"{name}.log"), worker_environ(trainer_path=True), before_run=while_held)
        assert proc is not None
        return proc, sock

    def not_yet_running(proc: _forks.ForkedProcess) -> None:
        time.sleep(0.5)  # far longer than a forked Echo worker needs to serve (~20 ms)
        assert proc.poll() is None and not (tmp_path / "released.sock").exists(), "it ran before its release"

    proc, sock = held("released", not_yet_running)
    try:
        wait_ready(f"unix://{sock}", 30, lambda: proc.poll() is None, lambda: "")
    finally:
        proc.terminate()
        proc.wait(10)
    # The server goes while the worker is held; with it the gate the worker waits on.
    orphan, sock = held("never", lambda _: _forks.shutdown())
    assert orphan.wait(10) == 1 or orphan.status_lost
    assert not sock.exists()


def test_a_worker_that_cannot_be_prepared_is_killed_unrun_and_the_server_works_on(tmp_path) -> None:
    argv = ["echo", "--unix", str(tmp_path / "w.sock"), "--owner-pid", str(os.getpid())]
    seen: list[_forks.ForkedProcess] = []

    def refuse(proc: _forks.ForkedProcess) -> None:  # as when its cgroup cannot be joined
        seen.append(proc)
        raise RuntimeError("no cgroup")

    with pytest.raises(RuntimeError, match="no cgroup"):
        _forks.spawn(argv, str(tmp_path / "w.log"), worker_environ(trainer_path=True), before_run=refuse)
    assert seen[0].wait(10) == -signal.SIGKILL and not (tmp_path / "w.sock").exists()

    def die(proc: _forks.ForkedProcess) -> None:  # it dies while held: its gate has no reader left
        seen.append(proc)
        proc.kill()
        assert proc.wait(10) == -signal.SIGKILL

    assert _forks.spawn(argv, str(tmp_path / "w.log"), worker_environ(trainer_path=True), before_run=die) is seen[1]
    provider = ProcessProvider()
    [worker] = provider.start("echo")
    try:
        assert _ppid(worker.pid) == seen[1]._server.proc.pid and _echo(worker) == "hi"
    finally:
        provider.stop_all([worker])


_OWNER_KILLED_WHILE_STARTING = """
import os, signal
from openenv_gym.providers import _forks
from openenv_gym.providers._runtime import runtime_dir, worker_environ
folder = os.path.join(runtime_dir(), f"{os.getpid()}-pstarting")
os.makedirs(folder)
argv = ["echo", "--unix", os.path.join(folder, "w0.sock"), "--owner-pid", str(os.getpid()),
        "--owner-dir", folder, "--idle-timeout", "0"]

def die(worker):  # while the worker is held for its cgroup, before any of its code runs
    print(folder, worker.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

_forks.spawn(argv, os.path.join(folder, "w0.log"), worker_environ(trainer_path=True), before_run=die)
"""


def test_an_owner_killed_while_its_worker_starts_leaves_no_folder(procs, tmp_path) -> None:
    # A running worker removes its pool's folder when its owner dies; one still starting
    # never runs, so the fork server, told no goodbye, sweeps after its dead owner. (A TMPDIR
    # of its own: no other trainer's sweep reaches this folder.)
    env = dict(os.environ, TMPDIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    owner = subprocess.Popen([sys.executable, "-c", _OWNER_KILLED_WHILE_STARTING], stdout=subprocess.PIPE,
                             text=True, env=env)
    folder, worker = owner.stdout.readline().split()
    assert owner.wait(30) == -signal.SIGKILL
    assert folder.startswith(str(tmp_path)) and os.path.isdir(folder)
    deadline = time.monotonic() + 30
    while os.path.exists(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(folder)
    assert procs.wait_gone({int(worker)}) == set()



def test_no_resource_warning_from_the_fork_server_in_dev_mode() -> None:
    # The fork server inherits the trainer's PYTHONDEVMODE: its unclosed socket printed a
    # ResourceWarning on the trainer's terminal at every exit.
    train = ("import gymnasium as gym, openenv_gym\n"
             "env = gym.make('OpenEnv/Echo-v0', provider='process')\n"
             "env.reset(seed=0); env.step({'message': 'hi'}); env.close(); print('done')\n")
    out = subprocess.run([sys.executable, "-c", train], env=dict(os.environ, PYTHONDEVMODE="1"),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["done"], out.stderr[-3000:]
    assert "ResourceWarning" not in out.stderr, out.stderr[-3000:]


_LOG_FOLDER_GONE = """
import os
from openenv_gym.providers import _forks
from openenv_gym.providers._runtime import worker_environ
folder = os.path.join(os.environ["TMPDIR"], "removed-pool")  # never made: removed by its owner
argv = ["echo", "--unix", os.path.join(folder, "w0.sock"), "--owner-pid", str(os.getpid())]
proc = _forks.spawn(argv, os.path.join(folder, "w0.log"), worker_environ(trainer_path=True))
print("exit", proc.wait(30), flush=True)
_forks.shutdown()
"""


def test_a_worker_whose_pool_folder_is_gone_exits_without_a_traceback(tmp_path) -> None:
    # A start cut short by Ctrl-C removes its pool folder while the server may still fork its
    # worker: the worker cannot open its log there, and exits. It printed a FileNotFoundError
    # traceback on the server's stderr, the trainer's terminal.
    env = dict(os.environ, TMPDIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-c", _LOG_FOLDER_GONE], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.stdout.split() == ["exit", "1"], (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr and "FileNotFoundError" not in run.stderr, run.stderr
