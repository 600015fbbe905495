"""Shared pieces of the security suite: the tally, leak probes and host probes.

Every test records what it tried through :func:`record` (an attack, a fault, a bad input)
with the expected and the observed outcome; ``conftest.py`` prints the counts and the
table at the end of the run. Leak probes look only at what is provably ours: containers
by our labels and owner pid, processes by their ``--owner-pid``/environment, socket
files in our runtime folder. Other engineers' workers on the same machine are never
counted, touched or ended.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

#: Tally of the run: attacks, faults, bad_inputs, leaks, and load runs.
COUNTS: Counter = Counter()
#: One row per recorded event: (kind, name, provider, expected, observed).
ROWS: list[tuple[str, str, str, str, str]] = []
_lock = threading.Lock()

KINDS = ("attacks", "faults", "bad_inputs", "leaks", "loads")


def record(kind: str, name: str, expected: str, observed: str, provider: str = "",
           n: int = 1) -> None:
    """Count ``n`` events of ``kind`` and keep one table row for them."""
    assert kind in KINDS, kind
    with _lock:
        COUNTS[kind] += n
        ROWS.append((kind, name, provider, expected, observed))


def leak(what: str) -> None:
    """Count a leak (a test that finds one also fails)."""
    record("leaks", what, "nothing left", "LEFT BEHIND")


# ---------------------------------------------------------------- /proc readers

def proc_status(pid: int) -> dict[str, str]:
    """``/proc/PID/status`` as a dict ({} when the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return {k: v.strip() for k, _, v in (line.partition(":") for line in f)}
    except OSError:
        return {}


def fd_count(pid: int) -> int:
    """Open descriptors of ``pid`` (-1 when gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def threads(pid: int) -> int:
    return int(proc_status(pid).get("Threads", "0"))


def rss_kib(pid: int) -> int:
    return int(proc_status(pid).get("VmRSS", "0 kB").split()[0])


def cmdline(pid: int | str) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def environ(pid: int | str) -> dict[bytes, bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = f.read().split(b"\0")
    except OSError:
        return {}
    return dict(p.split(b"=", 1) for p in pairs if b"=" in p)


def pids() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def _run_for(owner: int, module: bytes) -> set[int]:
    """Processes running ``python -m MODULE ... --owner-pid OWNER``."""
    found = set()
    for pid in pids():
        args = cmdline(pid)
        if module in args and b"--owner-pid" in args:
            i = args.index(b"--owner-pid")
            if args[i + 1:i + 2] == [str(owner).encode()]:
                found.add(pid)
    return found


def workers_of(owner: int) -> set[int]:
    """Worker processes started with ``--owner-pid OWNER`` (process provider), spawned or forked."""
    return _run_for(owner, b"openenv_gym.server")


def fork_servers_of(owner: int) -> set[int]:
    """Fork servers started by OWNER (the process provider's, which fork its workers)."""
    return {p for p in _run_for(owner, b"openenv_gym.server.forkserver") if b"--sentinel" not in cmdline(p)}


def sentinels_of(owner: int) -> set[int]:
    """The sentinels of OWNER's fork servers (which end a hung worker when a server is killed
    with its owner): each ends with its server, or after its sweep once both are gone."""
    return {p for p in _run_for(owner, b"openenv_gym.server.forkserver") if b"--sentinel" in cmdline(p)}


def key_values(text: str) -> dict[str, str]:
    """The ``key=value`` lines an attack printed (what it observed), as a dict."""
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def one_coding_step(code: str, **env_kwargs: Any) -> dict[str, Any]:
    """The observation of one step of ``code`` in a fresh Coding-v0 env on the process provider."""
    import gymnasium as gym

    env = gym.make("OpenEnv/Coding-v0", provider="process", **env_kwargs)
    try:
        env.reset()
        obs, *_ = env.step({"code": code})
    finally:
        env.close()
    return obs


def processes_with_home_under(base: str) -> set[int]:
    """Processes (host or container) whose HOME lies under ``base``: a sandbox's children.

    Container processes are visible in the host's /proc with host pids; their environment
    names the in-container path, which is unique per sandbox (``mkdtemp``).
    """
    key = base.encode()
    found = set()
    for pid in pids():
        home = environ(pid).get(b"HOME", b"")
        if home.startswith(key) and proc_status(pid).get("State", "Z")[:1] != "Z":
            found.add(pid)
    return found


def sandbox_base(env: Any) -> str:
    """The folder holding a Coding env's sandbox (found with a step): the children of its
    steps have their HOME under it, for :func:`processes_with_home_under`."""
    obs, *_ = env.step({"code": "import os; print(os.getcwd())"})
    return os.path.dirname(obs["stdout"].strip())


def descendants(root: int) -> set[int]:
    """Live descendants of ``root`` (by the ppid chain)."""
    children: dict[int, list[int]] = {}
    for pid in pids():
        st = proc_status(pid)
        if st and st.get("State", "Z")[:1] != "Z":
            children.setdefault(int(st.get("PPid", "0")), []).append(pid)
    out, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def listening_ports(pid_set: set[int]) -> set[int]:
    """TCP ports in LISTEN state whose socket inode belongs to one of ``pid_set``."""
    inodes: set[str] = set()
    for pid in pid_set:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                m = re.match(r"socket:\[(\d+)\]", target)
                if m:
                    inodes.add(m.group(1))
        except OSError:
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:
                ports.add(int(f[1].rsplit(":", 1)[1], 16))
    return ports


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    """Poll ``predicate`` until true or ``timeout`` seconds pass; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


# ---------------------------------------------------------------- docker

def docker_client() -> Any:
    import docker

    return docker.from_env(timeout=60)


def our_containers(client: Any, owner_pid: int) -> list[Any]:
    """Containers of ours (project label) owned by ``owner_pid`` on this host."""
    from openenv_gym.providers._docker_owner import LABEL_HOST, LABEL_OWNER_PID, host_id, project_filter

    return client.containers.list(all=True, ignore_removed=True, filters=project_filter(
        **{LABEL_OWNER_PID: str(owner_pid), LABEL_HOST: host_id()}))


def owned_runtime_entries(owner_pid: int) -> list[str]:
    """Socket files left in our runtime folder by ``owner_pid``'s pools."""
    from openenv_gym.providers._runtime import runtime_dir

    root = runtime_dir()
    found = []
    for entry in os.listdir(root):
        if entry.split("-", 1)[0] == str(owner_pid):
            for dirpath, _, files in os.walk(os.path.join(root, entry)):
                found += [os.path.join(dirpath, f) for f in files if f.endswith(".sock")]
    return found


def owned_cgroups(owner_pid: int) -> list[str]:
    """Cgroup folders the process provider made for ``owner_pid``'s workers and left."""
    from openenv_gym.providers import _cgroup

    try:
        _, bases = _cgroup._bases()
    except OSError:  # no cgroups here: none can be left
        return []
    stems = (f"{_cgroup.PREFIX}{owner_pid}-", f"{_cgroup.PREFIX}{owner_pid}@")  # with its PID namespace
    return sorted({os.path.join(base, e) for base in bases.values() for e in os.listdir(base) if e.startswith(stems)})


def fork_bomb_skip(why: str) -> str | None:
    """Why a fork bomb run as root cannot be tried on the process provider here, or None.

    Root ignores RLIMIT_NPROC: only a worker's cgroup (pids limit) bounds it.
    """
    from openenv_gym.providers import _cgroup

    ok, reason = _cgroup.support()
    return None if os.geteuid() != 0 or ok else f"{why}; this machine gives workers no cgroup ({reason})"


@dataclass
class HostProbe:
    """What the host looks like before an attack, to check it is unaffected after.

    Attributes:
        tmp_free: Free bytes on the file system of the host's temp folder.
        canaries: Host paths an attack must not create.
    """

    tmp_free: int
    canaries: tuple[str, ...]

    @classmethod
    def take(cls) -> "HostProbe":
        import tempfile

        return cls(shutil.disk_usage(tempfile.gettempdir()).free,
                   ("/openenv-gym-pwned", "/etc/openenv-gym-pwned", "/usr/openenv-gym-pwned"))

    def problems(self, disk_slack: int = 512 << 20) -> list[str]:
        """What changed on the host that should not have (empty when unaffected)."""
        import tempfile

        out = [f"{p} exists on the host" for p in self.canaries if os.path.exists(p)]
        free = shutil.disk_usage(tempfile.gettempdir()).free
        # Other engineers share the disk: only a large drop counts.
        if self.tmp_free - free > disk_slack:
            out.append(f"host temp disk lost {(self.tmp_free - free) >> 20} MiB")
        return out


def docker_engine_pid() -> int | None:
    """The running dockerd's pid from its own pid file (never found by name)."""
    try:
        pid = int(open("/var/run/docker.pid").read().strip())
    except (OSError, ValueError):
        return None
    return pid if os.path.exists(f"/proc/{pid}") else None


def docker_ok() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


class EnvsByConfine(dict):
    """One env per ``confine`` value, made on first use and all closed by :meth:`close`:
    the attacks run confined, and those that inspect Docker's own layer with Landlock off.

    Args:
        env_id: The Gymnasium id.
        provider: The provider.
        **kwargs: The rest of ``gym.make``'s arguments.
    """

    def __init__(self, env_id: str, provider: str, **kwargs: Any) -> None:
        super().__init__()
        self.env_id, self.provider, self.kwargs = env_id, provider, kwargs

    def __missing__(self, confine: bool) -> tuple[str, Any]:
        import gymnasium as gym

        self[confine] = (self.provider, gym.make(self.env_id, provider=self.provider, confine=confine,
                                                 **self.kwargs))
        return self[confine]

    def close(self) -> None:
        for _, env in self.values():
            env.close()
