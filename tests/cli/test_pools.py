"""``start``, ``ps``, ``logs``, ``stop`` and ``serve`` on real workers, through the real command."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
import uuid

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.client.transport import BinaryClient
from openenv_gym.providers._tmpfs import support as tmpfs_support
from tests.cli.cli_helpers import end, run, run_json, spawn, wait_for


def _pool_name() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def _pid_gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_start_ps_logs_stop_a_pool(provider: str, tmp_path) -> None:
    name, log = _pool_name(), str(tmp_path / "start.log")
    proc = spawn("start", "echo", "-n", "2", "--provider", provider, "--name", name,
                 "--env-kwargs", '{"max_steps": 3}', log=log,
                 env={"COLUMNS": "80"})  # rich's width when output is not a terminal
    try:
        wait_for(rf"pool {name} is running", log, proc, timeout=180)
        with open(log) as f:
            printed = f.read()
        assert "w0" in printed and "w1" in printed and "unix://" in printed
        # What the addresses are for: attaching an env (done below with worker 0's).
        assert 'gym.make("OpenEnv/Echo-v0", base_url=' in printed

        [record] = [r for r in run_json("ps", "--json") if r["name"] == name]
        assert record["env"] == "echo" and record["provider"] == provider
        assert record["owner_pid"] == proc.pid and len(record["workers"]) == 2
        for worker in record["workers"]:  # whole, to paste, though the log is no terminal
            assert worker["address"] in printed, printed
        assert run("ps").returncode == 0 and name in run("ps").stdout

        # The printed addresses serve episodes (the env kwargs reached the workers).
        attached = gym.make("OpenEnv/Echo-v0", base_url=record["workers"][0]["address"])
        attached.reset(seed=0)
        assert attached.step({"message": "hi"})[0]["echo"] == "hi"
        attached.close()
        for worker in record["workers"]:
            client = BinaryClient(worker["address"], timeout=30)
            sid = client.request({"op": "reset", "seed": 0})["sid"]
            for _ in range(3):
                out = client.request({"op": "step", "sid": sid, "action": {"message": "hey"}})
            assert out["obs"]["echo"] == "hey" and out["truncated"]
            client.drop()

        logs = run("logs", name, "-w", "1")
        assert logs.returncode == 0 and "w1" in logs.stdout and "worker ready" in logs.stdout
        assert run("logs", name, "-w", "7").returncode == 2
        nothing = run("logs", name, "--tail", "0")  # as `tail -n 0`
        assert nothing.returncode == 0 and nothing.stdout == "", nothing.stdout

        stopped = run("stop", name)
        assert stopped.returncode == 0 and f"stopped pool {name}" in stopped.stdout
        assert proc.wait(30) == 0
        assert name not in [r["name"] for r in run_json("ps", "--json")]
        for worker in record["workers"]:
            if worker.get("pid"):
                assert _pid_gone(worker["pid"])
            assert not os.path.exists(worker["address"].removeprefix("unix://"))
        if provider == "docker":
            import docker

            client = docker.from_env()
            assert not client.containers.list(all=True, ignore_removed=True, filters={"label": f"openenv-gym.pool={name}"})
    finally:
        end(proc)


def test_start_replaces_a_worker_that_dies(tmp_path) -> None:
    name, log = _pool_name(), str(tmp_path / "start.log")
    proc = spawn("start", "echo", "--provider", "process", "--name", name, log=log)
    try:
        wait_for(rf"pool {name} is running", log, proc)
        [record] = [r for r in run_json("ps", "--json") if r["name"] == name]
        old = record["workers"][0]["pid"]
        os.kill(old, signal.SIGKILL)
        wait_for("worker w0 died; restarting it", log, proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            [record] = [r for r in run_json("ps", "--json") if r["name"] == name]
            if record["workers"][0]["pid"] != old:
                break
            time.sleep(0.1)
        worker = record["workers"][0]
        assert worker["pid"] != old and worker["restarts"] == 1
        client = BinaryClient(worker["address"], timeout=30)
        assert client.request({"op": "health"})["status"] == "ok"
        client.drop()
    finally:
        assert end(proc) == 0  # SIGTERM is a normal stop


def test_worker_logs_tail_counts_lines_from_the_end(tmp_path) -> None:
    from openenv_gym.cli import pools

    log = tmp_path / "w0.log"
    log.write_text("one\ntwo\nthree\n")
    record = pools.PoolRecord(name="t", env="echo", provider="process", owner_pid=os.getpid(),
                              workers=[{"index": 0, "address": "unix:///x", "log": str(log)}])
    assert pools.worker_logs(record, tail=2) == {0: "two\nthree"}
    assert pools.worker_logs(record, tail=9) == {0: "one\ntwo\nthree"}
    assert pools.worker_logs(record, tail=0) == {0: ""}  # not every line, as lines[-0:] gives


@pytest.mark.parametrize("args", [
    ("start", "no-such-env"),
    ("start", "echo", "-n", "0"),
    ("start", "echo", "--env-kwargs", "[1]"),
    ("start", "echo", "--name", "Bad Name!"),
    ("stop",),
])
def test_start_and_stop_usage_errors(args: tuple[str, ...]) -> None:
    out = run(*args)
    assert out.returncode == 2 and "error:" in out.stderr


def test_stop_and_logs_of_an_unknown_pool_fail_with_what_is_running() -> None:
    for args in (("stop", "no-such-pool"), ("logs", "no-such-pool")):
        out = run(*args)
        assert out.returncode == 1 and "openenv-gym ps" in out.stderr


def test_start_refuses_a_name_already_running_and_a_bad_env_kwarg(tmp_path) -> None:
    name, log = _pool_name(), str(tmp_path / "start.log")
    proc = spawn("start", "echo", "--provider", "process", "--name", name, log=log)
    try:
        wait_for(rf"pool {name} is running", log, proc)
        again = run("start", "echo", "--provider", "process", "--name", name)
        assert again.returncode == 2 and "already running" in again.stderr
    finally:
        end(proc)
    # An env argument the env rejects is a bad argument (exit 2), named, without a traceback.
    broken = run("start", "echo", "--provider", "process", "--env-kwargs", '{"max_steps": 0}')
    assert broken.returncode == 2 and "cannot make env 'echo'" in broken.stderr
    assert "max_steps must be >= 1" in broken.stderr and "Traceback" not in broken.stderr
    unknown = run("serve", "echo", "--port", "0", "--env-kwargs", '{"max_step": 5}')
    assert unknown.returncode == 2 and "unexpected keyword argument 'max_step'" in unknown.stderr
    assert "it takes max_steps" in unknown.stderr and "Traceback" not in unknown.stderr


@pytest.mark.skipif(not tmpfs_support()[0], reason=f"no private tmpfs here: {tmpfs_support()[1]}")
def test_serve_of_an_untrusted_env_isolates_itself_and_cleans_up_on_sigterm(tmp_path) -> None:
    """`serve coding` gets what a process worker of Coding gets: a cgroup and a private tmpfs."""
    from openenv_gym.providers import _cgroup

    log = str(tmp_path / "serve.log")
    proc = spawn("serve", "coding", "--port", "0", log=log)
    try:
        http = wait_for(r"http=(http://127\.0\.0\.1:\d+)", log, proc).group(1)
        # The server is the child of the process started (cli/_supervise.py).
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            (server,) = map(int, f.read().split())
        with open(f"/proc/{server}/mountinfo") as f:
            mounts = [m for m in f.read().splitlines() if f"/{server}-serve " in m]
        assert len(mounts) == 1 and " - tmpfs " in mounts[0] and "size=65536k" in mounts[0], mounts
        with open(f"/proc/{server}/cgroup") as f:
            groups = [line for line in f.read().splitlines()
                      if f"{_cgroup.PREFIX}{server}@" in line and line.endswith("-serve")]
        assert len(groups) == (2 if _cgroup.support()[0] else 0), groups  # pids and memory (v1)
        body = json.dumps({}).encode()
        req = urllib.request.Request(f"{http}/reset", body, {"content-type": "application/json"})
        sid = json.load(urllib.request.urlopen(req, timeout=20))["session_id"]
        body = json.dumps({"session_id": sid, "action": {"code": "import os; print(os.getcwd())"}}).encode()
        req = urllib.request.Request(f"{http}/step", body, {"content-type": "application/json"})
        cwd = json.load(urllib.request.urlopen(req, timeout=20))["observation"]["stdout"].strip()
        assert f"/{server}-serve/" in cwd, cwd  # the sandbox lives in the tmpfs
    finally:
        code = end(proc)
    assert code == 0  # a clean shutdown, not uvicorn's re-raised SIGTERM
    runtime = cwd.split(f"/{server}-serve/")[0]  # the runtime folder holds its mount point
    leftovers = [os.path.join(root, entry) for root in ("/sys/fs/cgroup/pids", runtime)
                 if os.path.isdir(root) for entry in os.listdir(root)
                 if entry.startswith((f"{server}-serve", f"{_cgroup.PREFIX}{server}"))]
    assert not leftovers, leftovers


def test_serve_answers_http_and_web_and_exits_on_sigterm(tmp_path) -> None:
    log = str(tmp_path / "serve.log")
    proc = spawn("serve", "echo", "--port", "0", log=log)
    try:
        http = wait_for(r"http=(http://127\.0\.0\.1:\d+)", log, proc).group(1)
        body = json.dumps({}).encode()
        req = urllib.request.Request(f"{http}/reset", body, {"content-type": "application/json"})
        sid = json.load(urllib.request.urlopen(req, timeout=10))["session_id"]
        body = json.dumps({"session_id": sid, "action": {"message": "web"}}).encode()
        req = urllib.request.Request(f"{http}/step", body, {"content-type": "application/json"})
        assert json.load(urllib.request.urlopen(req, timeout=10))["observation"]["echo"] == "web"
        page = urllib.request.urlopen(f"{http}/web", timeout=10).read().decode()
        assert "EventSource" in page
        state = json.load(urllib.request.urlopen(f"{http}/web/state", timeout=10))
        assert state["sessions"][0]["history"][0]["action"] == "message: web"
    finally:
        # uvicorn re-raises SIGTERM after its graceful shutdown: -15 is a clean exit here.
        assert end(proc) in (0, -signal.SIGTERM)
    assert run("serve", "no-such-env").returncode == 2


def test_a_second_start_of_a_name_is_refused_while_the_first_pool_still_starts(tmp_path, monkeypatch) -> None:
    """Two `start`s of one name at once: the name was checked before the workers started
    and recorded only after, so both ran, the later record replaced the earlier, and
    `stop NAME` (or the first pool's own end) left a pool that `ps`/`stop` no longer find."""
    from openenv_gym.cli import main
    from openenv_gym.cli import pools
    from openenv_gym.errors import WorkerError
    from openenv_gym.providers.process import ProcessProvider

    name, log = _pool_name(), str(tmp_path / "second.log")
    outcome: dict[str, str] = {}

    def start_while_another_start_runs(self, *args, **kwargs):
        # The first pool's workers are "starting": the second `start` runs now.
        second = spawn("start", "echo", "-n", "1", "--provider", "process", "--name", name, log=log)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and "said" not in outcome:
                with open(log, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for said in ("already running", "is running"):
                    if said in text:
                        outcome["said"] = said
                if second.poll() is not None and "said" not in outcome:
                    outcome["said"] = text
                time.sleep(0.05)
        finally:
            end(second)
        raise WorkerError("this test's first pool does not start")

    monkeypatch.setattr(ProcessProvider, "start", start_while_another_start_runs)
    assert main(["start", "echo", "-n", "1", "--provider", "process", "--name", name]) == 1
    assert outcome.get("said") == "already running", outcome
    assert pools.find(name) is None  # a pool that did not start leaves no record


def test_a_pool_record_is_removed_by_its_own_owner_only() -> None:
    import subprocess
    import sys

    from openenv_gym.cli import pools

    name = _pool_name()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = pools.PoolRecord(name=name, env="echo", provider="process", owner_pid=other.pid)
        pools.save(theirs)
        mine = pools.PoolRecord(name=name, env="echo", provider="process", owner_pid=os.getpid())
        pools.remove(mine)  # a pool of the same name that lost the race, ending
        assert pools.find(name) is not None and pools.find(name).owner_pid == other.pid
    finally:
        other.kill()
        other.wait()
        pools.remove(theirs)


def test_removing_a_record_takes_turns_with_a_start_that_takes_the_name_over() -> None:
    # remove() read the record, then unlinked it, without the lock claim() holds: a `start`
    # that took the name over in between lost its fresh record (ps and stop lost its pool).
    import fcntl
    import subprocess
    import sys
    import threading

    from openenv_gym.cli import pools

    name = _pool_name()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    mine = pools.PoolRecord(name=name, env="echo", provider="process", owner_pid=os.getpid())
    theirs = pools.PoolRecord(name=name, env="echo", provider="process", owner_pid=other.pid)
    pools.save(mine)
    try:
        with open(os.path.join(pools.pools_dir(), ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # as a claim() of the name in progress
            ending = threading.Thread(target=pools.remove, args=(mine,))
            ending.start()
            ending.join(0.5)
            assert ending.is_alive(), "remove() did not wait for the lock"
            pools.save(theirs)  # the claim takes the name over, then lets go
        ending.join(30)
        assert not ending.is_alive()
        assert pools.find(name) is not None and pools.find(name).owner_pid == other.pid
    finally:
        other.kill()
        other.wait()
        pools.remove(theirs)


@pytest.mark.parametrize("name", ["pool\n", "a\n", "echo-1\n"])
def test_a_pool_name_with_a_trailing_newline_is_refused(name: str) -> None:
    # A regex's "$" matches before a final newline: such a pool's folder, socket and record
    # had a newline in their names, and `logs NAME` could not find it.
    from openenv_gym.cli.pools import valid_name

    assert valid_name(name.rstrip("\n")) and not valid_name(name)


def test_a_pool_still_starting_is_shown_as_starting_and_logs_say_so() -> None:
    # `start` writes its record when it takes the name, seconds before the workers are up:
    # `ps` showed "0/0 up" and `logs POOL -w 0` said "no worker 0; its workers are 0..-1".
    from openenv_gym.cli import pools

    name = _pool_name()
    record = pools.PoolRecord(name=name, env="echo", provider="process", owner_pid=os.getpid())
    assert pools.claim(record)
    try:
        out = run("logs", name, "-w", "0")
        assert out.returncode == 1 and f"pool {name} is still starting" in out.stderr, out.stderr
        table = run("ps", env={"COLUMNS": "200"})
        assert any(name in line and "starting" in line for line in table.stdout.splitlines()), table.stdout
    finally:
        pools.remove(record)
