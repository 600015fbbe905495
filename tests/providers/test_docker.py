"""The docker provider against a real engine: drop-in behaviour, hardening, limits, cleanup.

Every test here uses real containers built from the real images; they skip without an
engine (and fail under OPENENV_GYM_REQUIRE_DOCKER=1).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import ProviderUnavailableError, WorkerError
from openenv_gym.providers._docker_hardening import CONTAINER_UID, container_options
from tests.conftest import ctrl_c_after, require_docker

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def client():
    require_docker()
    import docker

    c = docker.from_env()
    yield c
    c.close()


@pytest.fixture(scope="module")
def provider(client):
    from openenv_gym.providers.docker import DockerProvider

    return DockerProvider()


def _ours(client, **labels):
    from openenv_gym.providers._docker_owner import project_filter

    return client.containers.list(all=True, ignore_removed=True, filters=project_filter(**labels))


def _exec(worker, script: str, timeout: float = 60.0) -> tuple[int, str]:
    """Run python code in the worker's container as its own (non-root) user."""
    proc = subprocess.run(["docker", "exec", "-u", worker.run_options["user"],
                           worker.container_id, "python", "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def _episode(address: str) -> None:
    c = BinaryClient(address, 30.0)
    try:
        out = c.request({"op": "reset", "seed": 1})
        out = c.request({"op": "step", "sid": out["sid"], "action": {"message": "again"}})
        assert out["obs"]["echo"] == "again"
    finally:
        c.drop()


def test_echo_drop_in_for_process():
    require_docker()
    env = gym.make("OpenEnv/Echo-v0", provider="docker")
    try:
        assert env.unwrapped.provider_name == "docker"
        obs, info = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step({"message": "hello"})
        assert obs["echo"] == "hello" and reward == pytest.approx(0.5)
    finally:
        env.close()


def test_gym_env_same_trajectory_as_process():
    require_docker()
    trajectories = []
    for provider in ("process", "docker"):
        env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider)
        try:
            obs, _ = env.reset(seed=42)
            rows = [obs]
            for t in range(20):
                obs, reward, terminated, truncated, _ = env.step(t % 2)
                rows.append(obs)
                if terminated or truncated:
                    break
            trajectories.append(np.stack(rows))
        finally:
            env.close()
    np.testing.assert_array_equal(trajectories[0], trajectories[1])


def test_close_removes_container(client):
    before = {c.id for c in _ours(client, **{"openenv-gym.owner-pid": str(os.getpid())})}
    env = gym.make("OpenEnv/Echo-v0", provider="docker")
    env.reset(seed=0)
    mine = [c for c in _ours(client, **{"openenv-gym.owner-pid": str(os.getpid())})
            if c.id not in before]
    assert len(mine) == 1 and mine[0].status == "running"
    labels = mine[0].labels
    assert labels["openenv-gym.env"] == "echo" and labels["openenv-gym.pool"]
    env.close()
    after = {c.id for c in _ours(client, **{"openenv-gym.owner-pid": str(os.getpid())})}
    assert mine[0].id not in after


@pytest.mark.parametrize("n", [1, 3])
def test_ctrl_c_while_containers_start_leaves_none(client, provider, n):
    # An interrupted gym.make in a notebook must not leave its containers running until the
    # kernel exits: the one being started is removed, and so are the others of its pool.
    mine = {"openenv-gym.owner-pid": str(os.getpid())}
    before = {c.id for c in _ours(client, **mine)}
    def started() -> bool:  # interrupt once a container runs, while the start waits on it
        return bool({c.id for c in _ours(client, **mine) if c.status == "running"} - before)

    with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.0, when=started):
        provider.start("echo", n)
    assert {c.id for c in _ours(client, **mine)} - before == set()


def test_hardening_applied_and_overridable(client):
    from openenv_gym.providers.docker import DockerProvider

    p = DockerProvider(container_options={"pids_limit": 64, "mem_limit": "256m"})
    [w] = p.start("echo")
    try:
        host = client.api.inspect_container(w.container_id)["HostConfig"]
        assert host["PidsLimit"] == 64
        assert host["Memory"] == host["MemorySwap"] == 256 * 1024 * 1024
        assert host["CapDrop"] == ["ALL"] and host["ReadonlyRootfs"] is True
        assert host["NetworkMode"] == "none" and host["Init"] is True
        assert "no-new-privileges" in host["SecurityOpt"]
        assert {u["Name"] for u in host["Ulimits"]} == {"nofile", "fsize"}
    finally:
        p.stop_all([w])
    # One source of truth: defaults come from HARDENING, None removes one.
    assert "network_mode" not in container_options({"network_mode": None})


def test_inside_worker_unprivileged_offline_readonly(provider):
    [w] = provider.start("echo")
    try:
        rc, out = _exec(w, """
            import os, glob
            def status(pid):
                return dict(l.split(":", 1) for l in open(f"/proc/{pid}/status") if ":" in l)
            server = [p.split("/")[2] for p in glob.glob("/proc/[0-9]*/cmdline")
                      if b"openenv_gym.server" in open(p, "rb").read()]
            assert server, "server process not found"
            for pid in (server[0], "self"):
                s = status(pid)
                print("uid", s["Uid"].split()[0], "capeff", int(s["CapEff"], 16),
                      "nnp", s["NoNewPrivs"].strip())
            ifaces = [l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:]]
            print("ifaces", ",".join(ifaces))
            print("routes", len(open("/proc/net/route").readlines()[1:]))
            try:
                open("/etc/probe", "w")
                print("rootfs writable")
            except OSError as exc:
                print("rootfs", exc.strerror)
            root = [l.split() for l in open("/proc/mounts") if l.split()[1] == "/"][-1]
            print("rootopts", root[3].split(",")[0])
        """)
        assert rc == 0, out
        lines = out.splitlines()
        for line in lines[:2]:
            fields = line.split()
            assert fields[1] != "0", f"runs as root: {line}"
            assert fields[3] == "0", f"effective capabilities: {line}"
            assert fields[5] == "1", f"no-new-privileges not set: {line}"
        assert "ifaces lo" in lines
        assert "routes 0" in lines
        assert "rootfs Read-only file system" in lines
        assert "rootopts ro" in lines
        # Writable scratch space exists, and it is the size-limited tmpfs.
        rc, out = _exec(w, "open('/tmp/x', 'w').write('ok'); open('/workspace/x', 'w').write('ok')")
        assert rc == 0, out
        # The socket folder is on the host's disk, with no size limit: once the server
        # serves, nothing in the container may write there (confine=False code could).
        rc, out = _exec(w, "open('/run/openenv/fill', 'wb').write(b'x')")
        assert rc != 0 and "PermissionError" in out, out
        assert not os.path.exists(os.path.join(w.folder, "fill"))
    finally:
        provider.stop_all([w])


def test_memory_bomb_oom_killed_and_worker_death_replaced():
    from openenv_gym.providers.docker import DockerProvider

    require_docker()
    env = gym.make("OpenEnv/Echo-v0", provider="docker",
                   provider_options={"container_options": {"mem_limit": "160m"}})
    try:
        env.reset(seed=0)
        worker = env.unwrapped.worker
        # A memory bomb in the container is OOM-killed by the cgroup limit (no swap).
        rc, out = _exec(worker, """
            blocks = []
            while True:
                blocks.append(bytearray(16 * 1024 * 1024))
        """)
        assert rc == 137, (rc, out)  # SIGKILL from the OOM killer
        # The worker itself dies (the same fate when the OOM killer picks it): the session
        # gets a clear, typed error, and the next reset runs on a replacement container.
        old_id = worker.container_id
        _exec(worker, """
            import glob, os, signal
            for p in glob.glob("/proc/[0-9]*/cmdline"):
                if b"openenv_gym.server" in open(p, "rb").read():
                    os.kill(int(p.split("/")[2]), signal.SIGKILL)
        """)
        deadline = time.monotonic() + 20
        while worker.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not worker.alive()
        assert "exit" in worker.exit_reason()
        with pytest.raises(WorkerError):
            env.step({"message": "lost"})
        obs, _ = env.reset(seed=1)
        assert worker.restarts == 1 and worker.container_id != old_id
        assert worker.last_exit and "137" in worker.last_exit
        # Docker's OOMKilled flag stays from the bomb's kill: the worker's SIGKILL from inside
        # the container cannot be told from an OOM kill (a `docker kill` can, in the engine's
        # event log), and the text does not claim one.
        assert "most likely" in worker.last_exit and "docker kill" in worker.last_exit, worker.last_exit
        obs, reward, *_ = env.step({"message": "next"})
        assert obs["echo"] == "next"
    finally:
        env.close()
    assert isinstance(env.unwrapped, openenv_gym.RemoteEnv)
    assert DockerProvider.name == "docker"


def test_fork_bomb_stops_at_pids_limit_and_worker_is_replaced(client):
    from openenv_gym.providers.docker import DockerProvider

    p = DockerProvider(container_options={"pids_limit": 48})
    [w] = p.start("echo")
    try:
        rc, out = _exec(w, """
            import os, time
            children = 0
            while True:
                try:
                    pid = os.fork()
                except OSError as exc:
                    print("fork refused:", exc.strerror, "after", children, flush=True)
                    break
                if pid == 0:
                    time.sleep(600)  # hold the pid: the container is replaced, not waited for
                    os._exit(0)
                children += 1
        """, timeout=120)
        assert rc == 0, out
        assert "fork refused: Resource temporarily unavailable" in out, out
        refused_after = int(out.split("after")[1])
        assert refused_after < 48
        stats = client.api.inspect_container(w.container_id)["HostConfig"]
        assert stats["PidsLimit"] == 48
        old_id = w.container_id
        w.restart()  # the bombed container is replaced as a whole (all its processes go)
        assert w.container_id != old_id and w.alive()
        _episode(w.address)
        assert old_id not in {c.id for c in _ours(client)}
    finally:
        p.stop_all([w])


def test_auto_build_off_names_build_command(tmp_path, monkeypatch):
    from openenv_gym.providers.docker import DockerProvider

    require_docker()
    src = Path(__file__).resolve().parents[2] / "containers"
    for name in ("Dockerfile", "build-base.sh"):
        shutil.copy2(src / name, tmp_path / name)
    # Changed inputs (a Dockerfile edit) mean a new tag: the image is "missing".
    with open(tmp_path / "Dockerfile", "a") as f:
        f.write(f"# test edit {time.time_ns()}\n")
    monkeypatch.setenv("OPENENV_GYM_CONTAINERS_DIR", str(tmp_path))
    p = DockerProvider(auto_build=False)
    with pytest.raises(ProviderUnavailableError, match="openenv-gym build echo"):
        p.start("echo")


def test_image_option_missing_image_is_clear():
    from openenv_gym.providers.docker import DockerProvider

    require_docker()
    p = DockerProvider(image="openenv-gym/does-not-exist:0")
    with pytest.raises(ProviderUnavailableError, match="not present"):
        p.start("echo")


_OWNER = """
import sys, time
import gymnasium as gym, openenv_gym
env = gym.make("OpenEnv/Echo-v0", provider="docker")
env.reset(seed=0)
print("ready", flush=True)
time.sleep(600)
"""


def test_owner_sigkilled_leaves_no_container(client):
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root),
                                                                    os.environ.get("PYTHONPATH")])))
    owner = subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert owner.stdout.readline().strip() == "ready"
        label = {"openenv-gym.owner-pid": str(owner.pid)}
        assert len(_ours(client, **label)) == 1
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        deadline = time.monotonic() + 30
        while _ours(client, **label) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _ours(client, **label) == []
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def _watchdog_of(owner_pid: int) -> int:
    """The pid of the watchdog the owner started (``_docker_owner.py OWNER_PID ...``)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if len(argv) > 2 and argv[1].endswith(b"_docker_owner.py") and argv[2] == str(owner_pid).encode():
                return int(entry)
    raise AssertionError(f"no watchdog for owner {owner_pid}")


def test_docker_stop_removes_orphans_and_their_socket_folders(client):
    """An owner SIGKILLed with its watchdog leaves its container; ``openenv-gym docker stop``
    removes it, and the folder its socket was served in."""
    from tests.cli.cli_helpers import run

    # A TMPDIR of its own (short: socket paths), so no other trainer's sweep reaches it.
    tmp = tempfile.mkdtemp(prefix="og-", dir="/tmp")
    runtime = os.path.join(tmp, f"openenv-gym-{os.getuid()}")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, TMPDIR=tmp,
               PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    owner = subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert owner.stdout.readline().strip() == "ready"
        label = {"openenv-gym.owner-pid": str(owner.pid)}
        assert [e for e in os.listdir(runtime) if e.startswith(f"{owner.pid}-")] and _ours(client, **label)
        os.kill(_watchdog_of(owner.pid), signal.SIGKILL)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        time.sleep(2)  # past the watchdog's poll: nothing else removes them now
        assert _ours(client, **label)
        stopped = run("docker", "stop", env={"TMPDIR": tmp})
        assert stopped.returncode == 0, stopped.stderr
        assert "removed openenv-gym-" in stopped.stdout
        assert _ours(client, **label) == []
        assert [e for e in os.listdir(runtime) if e.startswith(f"{owner.pid}-")] == []
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for c in _ours(client, **{"openenv-gym.owner-pid": str(owner.pid)}):
            c.remove(force=True)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.slow
def test_base_image_builds_from_nothing(client):
    """The registry-free path: a Debian base from mmdebstrap (or debootstrap), imported."""
    import docker.errors

    tag = f"openenv-gym/base:test-{os.getpid()}"
    script = Path(__file__).resolve().parents[2] / "containers" / "build-base.sh"
    try:
        subprocess.run(["bash", str(script), tag], check=True, timeout=600, capture_output=True)
        out = client.containers.run(tag, ["sh", "-c", "python3 -m venv --help >/dev/null && "
                                          "git --version && python3 --version"],
                                    remove=True, network_mode="none")
        assert b"git version" in out and b"Python 3.11" in out
    finally:
        try:
            client.images.remove(tag, force=True)
        except docker.errors.ImageNotFound:
            pass


def test_container_options_docker_py_refuses_are_typed_errors_naming_the_option() -> None:
    require_docker()
    for options, fragment in (([1, 2], "must be a mapping"), ({"bogus": 1}, r"does not take: \['bogus'\]"),
                              ({"mem_limit": "lots"}, "Docker SDK refuses.*memory"),
                              ({"pids_limit": "abc"}, "Docker SDK refuses.*pids_limit")):
        with pytest.raises(openenv_gym.InvalidRequestError, match=f"container_options.*{fragment}"):
            gym.make("OpenEnv/Echo-v0", provider="docker", provider_options={"container_options": options})
    # Removing the memory limit removes its swap limit too (Docker refuses one without the other).
    env = gym.make("OpenEnv/Echo-v0", provider="docker", provider_options={"container_options": {"mem_limit": None}})
    try:
        env.reset(seed=0)
        assert env.step({"message": "ok"})[0]["echo"] == "ok"
    finally:
        env.close()


def test_container_options_run_builds_itself_are_refused_naming_what_to_use(client, tmp_path) -> None:
    # containers.run takes volumes and ports, so "containers.run does not take: ['volumes']"
    # was false: the provider mounts its socket folder that way and gives workers no network.
    from docker.types import Mount

    for key, value, hint in (("volumes", {str(tmp_path): {"bind": "/data"}}, "mounts=[docker.types.Mount("),
                             ("ports", {"80/tcp": 8080}, "no network")):
        with pytest.raises(openenv_gym.InvalidRequestError, match=rf"cannot set '{key}': .*{re.escape(hint)}"):
            gym.make("OpenEnv/Echo-v0", provider="docker", provider_options={"container_options": {key: value}})
    # What the message offers works: a host folder mounted read-only beside the socket folder.
    env = gym.make("OpenEnv/Echo-v0", provider="docker", provider_options={"container_options": {
        "mounts": [Mount("/data", str(tmp_path), type="bind", read_only=True)]}})
    try:
        env.reset(seed=0)
        mounts = client.containers.get(env.unwrapped.worker.container_id).attrs["Mounts"]
        assert {(m["Destination"], m["RW"]) for m in mounts} >= {("/data", False), ("/run/openenv", True)}, mounts
    finally:
        env.close()


def test_a_paused_worker_is_named_paused_and_replaced(provider, client) -> None:
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="docker",
                        envs_per_worker=1, step_timeout=3)
    try:
        envs.reset(seed=0)
        worker = envs.pool.workers[0]
        client.containers.get(worker.container_id).pause()
        *_, infos = envs.step(np.array([0, 1]))
        assert infos["worker_restarted"].tolist() == [True, False]
        assert worker.last_exit.startswith("paused"), worker.last_exit  # not "exited with code 0"
        assert envs.step(np.array([0, 1]))[0].shape == (2, 4)
    finally:
        envs.close()


def test_container_option_the_engine_refuses_is_a_clear_error() -> None:
    require_docker()
    with pytest.raises(openenv_gym.ProviderUnavailableError, match="Unknown runtime.*container_options"):
        gym.make("OpenEnv/Echo-v0", provider="docker",
                 provider_options={"container_options": {"runtime": "no-such-runtime"}})
    # Refused only when the container starts (a docker-py APIError reached the caller).
    with pytest.raises(openenv_gym.ProviderUnavailableError,
                       match="could not start the worker container.*nonexistent-net.*container_options"):
        gym.make("OpenEnv/Echo-v0", provider="docker",
                 provider_options={"container_options": {"network_mode": "nonexistent-net"}})


def _as_non_root() -> list[str]:
    """Python with an ordinary user's file permissions: root without CAP_DAC_OVERRIDE (which
    ignores a folder's missing write bit), as a user of the docker group runs."""
    if os.geteuid() != 0:
        return [sys.executable]
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to drop root's CAP_DAC_OVERRIDE")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", sys.executable]


def test_an_owner_without_root_replaces_and_removes_its_workers(client, tmp_path) -> None:
    # The socket folder is closed to writes (0555) once the worker serves; its owner must
    # still unlink the socket in it to replace the worker, and remove it on close.
    script = textwrap.dedent("""
        import os, subprocess, warnings
        import gymnasium as gym, openenv_gym
        warnings.simplefilter("error", RuntimeWarning)  # "could not stop ... worker(s)"
        envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=1, provider="docker")
        envs.reset(seed=0)
        worker = envs.workers[0]
        folder = worker.folder
        subprocess.run(["docker", "kill", worker.container_id], check=True, capture_output=True)
        envs.reset(seed=1)  # replaces the dead worker
        print("restarts", worker.restarts, flush=True)
        envs.close()
        print("folder left", os.path.exists(folder), flush=True)
    """)
    proc = subprocess.run([*_as_non_root(), "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "restarts 1" in proc.stdout and "folder left False" in proc.stdout, proc.stdout


@pytest.mark.docker
def test_a_worker_containers_log_on_the_host_is_size_capped(provider, client):
    """Docker keeps the container's log in a host file that no limit of the container
    bounds; a Coding-v0 step with confine=False wrote 200 MiB there in 0.6 s through /proc/1/fd/1"""
    [worker] = provider.start("echo")
    try:
        code, out = _exec(worker, "import os\n"
                                  "fd = os.open('/proc/1/fd/1', os.O_WRONLY)\n"
                                  "for _ in range(24):\n"
                                  "    os.write(fd, b'x' * (1 << 20) + b'\\n')\n")
        assert code == 0, out
        path = client.api.inspect_container(worker.container_id)["LogPath"]
        folder = os.path.dirname(path)
        kept = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                   if f.startswith(os.path.basename(path)))
        assert kept < 8 << 20, kept  # 24 MiB written, capped to a few MiB
    finally:
        provider.stop_all([worker])


def test_removing_a_container_removed_meanwhile_is_no_error(provider, client) -> None:
    # `openenv-gym docker stop` right after a trainer died races the owner's watchdog (or
    # another `stop`) for the same containers: it crashed on NotFound.
    from openenv_gym.providers._docker_owner import remove

    [worker] = provider.start("echo")
    try:
        held = client.containers.get(worker.container_id)
        assert remove(held)
        assert not remove(held)  # gone already: no error, not counted
    finally:
        provider.stop_all([worker])


def test_docker_stop_says_which_containers_were_removed_meanwhile(provider, client, monkeypatch,
                                                                   capsys) -> None:
    # The race seen from the CLI: `stop` listed the container, then its owner removed it. It
    # printed nothing at all for it before, as if the name had not been chosen.
    import argparse

    from openenv_gym.cli import docker as cli_docker

    [worker] = provider.start("echo")
    try:
        listed = client.containers.get(worker.container_id)
    finally:
        provider.stop_all([worker])  # removed after `stop` listed it
    monkeypatch.setattr(cli_docker, "_ours", lambda _client: [listed])
    args = argparse.Namespace(names=[listed.name], all=False)
    assert cli_docker._stop(args) == 0
    out = capsys.readouterr().out
    assert f"{listed.name} was removed meanwhile" in out and "removed openenv-gym" not in out


PTRACE_THE_SERVER = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
ok = libc.ptrace(16, os.getppid(), 0, 0) == 0          # PTRACE_ATTACH to the worker server
print("attach=" + ("ok" if ok else os.strerror(ctypes.get_errno())))
try:
    open("/proc/%d/mem" % os.getppid(), "rb").close()
    print("mem=open")
except OSError as exc:
    print("mem=" + exc.strerror)
"""


@pytest.mark.docker
def test_a_step_without_landlock_cannot_ptrace_the_worker_server(client) -> None:
    """With confine=False only Docker's layer is left, and every process in the container
    has uid 10001: the step attached to its server with ptrace (and could open its memory),
    from where it could forge the reward and the replies the trainer decodes."""
    env = gym.make("OpenEnv/Coding-v0", provider="docker", confine=False, timeout=60)
    try:
        env.reset()
        obs, *_ = env.step({"code": PTRACE_THE_SERVER})
        assert "attach=Operation not permitted" in obs["stdout"], obs
        assert "mem=Permission denied" in obs["stdout"], obs
        obs, reward, *_ = env.step({"code": "print(2 + 2)"})
        assert obs["stdout"] == "4\n" and reward == 1.0
    finally:
        env.close()


def test_a_runtime_folder_that_is_not_utf8_is_refused_naming_tmpdir(client, tmp_path) -> None:
    # The engine's JSON API mangles such a bind-mount source and made a root-owned folder of
    # the mangled name, in which the worker could not bind: a PermissionError from inside the
    # container, after a build that itself failed in pip on the same path.
    tmpdir = os.fsencode(tmp_path) + b"/t\xff"
    os.mkdir(tmpdir)
    script = "import gymnasium as gym, openenv_gym\ngym.make('OpenEnv/Echo-v0', provider='docker')\n"
    done = subprocess.run([sys.executable, "-c", script], env={**os.environb, b"TMPDIR": tmpdir},
                          capture_output=True, timeout=300)
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 1 and "ProviderUnavailableError" in err, err
    assert "is not valid UTF-8" in err and "set TMPDIR" in err, err
    assert os.listdir(tmp_path) == [os.fsdecode(b"t\xff")]  # nothing made beside it


def test_a_runtime_folder_with_a_colon_is_refused_naming_tmpdir(client, tmp_path) -> None:
    # A bind mount is written "source:target:mode": the engine refused it as an "invalid
    # volume specification" and the error blamed container_options, which nobody had given.
    tmpdir = tmp_path / "a:b"
    tmpdir.mkdir()
    script = "import gymnasium as gym, openenv_gym\ngym.make('OpenEnv/Echo-v0', provider='docker')\n"
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(tmpdir)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "ProviderUnavailableError" in done.stderr, done.stderr
    assert "holds a ':'" in done.stderr and "set TMPDIR" in done.stderr, done.stderr
    assert "container_options" not in done.stderr


_HOLD_PROCESSES = """
import os, time
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)
"""

_START_A_THREAD_AND_A_PROCESS = """
import subprocess, threading
t = threading.Thread(target=print, args=("thread ok",)); t.start(); t.join()
print(subprocess.run(["echo", "process ok"], capture_output=True, text=True).stdout, end="")
"""


def test_processes_held_in_one_worker_leave_the_others_their_budget(client) -> None:
    # Every container ran as uid 10001, and the kernel counts RLIMIT_NPROC per uid across the
    # machine: a dozen idle Coding workers left no child a thread, and one REPL holding
    # processes took the budget of every other container's children.
    from openenv_gym.trl import EnvPool

    pool = EnvPool("coding", num_workers=2, provider="docker", persistent=True)
    try:
        a, b = pool.open(2)
        assert (a.worker, b.worker) == (0, 1)
        a.reset(), b.reset()
        held = a.step({"code": _HOLD_PROCESSES}).observations[-1]["stdout"]
        assert int(held) >= 60, held
        out = b.step({"code": _START_A_THREAD_AND_A_PROCESS})
        obs = out.observations[-1]
        assert obs["stdout"] == "thread ok\nprocess ok\n", obs["stderr"][-300:]
        assert out.rewards == [1.0]
    finally:
        pool.close()


def test_docker_stop_takes_a_name_or_an_id_prefix_of_one_container(provider, client) -> None:
    # As `docker rm`: a prefix that fits more than one container (another trainer's too)
    # removes nothing, and an unknown name is an error, not a note.
    from tests.cli.cli_helpers import run

    workers = provider.start("echo", n=2)
    try:
        a, b = (client.containers.get(w.container_id) for w in workers)
        common = os.path.commonprefix([a.id, b.id])  # fits both (and maybe others): ambiguous
        out = run("docker", "stop", common)
        assert out.returncode == 2 and "ambiguous" in out.stderr, out.stderr
        # `docker logs` reads a prefix alike (it printed the first container's log).
        out = run("docker", "logs", common)
        assert out.returncode == 2 and "ambiguous" in out.stderr and out.stdout == "", out.stderr
        assert run("docker", "logs", a.id[:12]).returncode == 0
        out = run("docker", "stop", a.id[:12], "no-such-openenv-container")
        assert out.returncode == 1 and "no-such-openenv-container" in out.stderr, out.stderr
        assert {c.id for c in _ours(client)} >= {a.id, b.id}  # nothing was removed
        out = run("docker", "stop", a.id[:12])
        assert out.returncode == 0, out.stderr
        left = {c.id for c in _ours(client)}
        assert a.id not in left and b.id in left
    finally:
        provider.stop_all(workers)
