"""Ownership of worker containers: labels, owner identity, the reaper and the watchdog.

The owner identity (:func:`host_id`, :func:`process_start`, :func:`owner_alive`) also names
the owners of process workers' pool folders and cgroups. It lives here, in a module that
imports nothing of the package, because the watchdog runs this file by path.

Every worker container carries labels naming the project, the owning process (pid, its
start time, and the host/pid namespace it lives in), the pool and the env. Containers whose
owner is gone are removed by

* :func:`reap_stale`, run when a provider starts (and by ``openenv-gym stop``), and
* a tiny detached watchdog per owner (:func:`ensure_watchdog`), which outlives an owner
  killed with SIGKILL, notices it is gone within a second and removes its containers.

Example:
    >>> labels = owner_labels(pool="p1", env="echo")
    >>> labels["openenv-gym.project"], labels["openenv-gym.env"]
    ('1', 'echo')
    >>> owner_alive(int(labels["openenv-gym.owner-pid"]), labels["openenv-gym.owner-start"])
    True
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any

__all__ = ["LABEL_PROJECT", "LABEL_OWNER_PID", "LABEL_OWNER_START", "LABEL_HOST", "LABEL_POOL",
           "LABEL_ENV", "project_filter", "owner_labels", "owner_alive", "host_id", "pid_namespace",
           "process_start", "stat_fields", "reap_stale", "remove", "remove_owned", "ensure_watchdog"]

LABEL_PROJECT = "openenv-gym.project"
LABEL_OWNER_PID = "openenv-gym.owner-pid"
LABEL_OWNER_START = "openenv-gym.owner-start"
LABEL_HOST = "openenv-gym.host"
LABEL_POOL = "openenv-gym.pool"
LABEL_ENV = "openenv-gym.env"

_POLL_SECONDS = 0.5


def stat_fields(pid: int | str = "self") -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the command name: ``[0]`` is the state letter,
    proc(5)'s field 3, so proc(5)'s field N is ``[N - 3]`` (start time, field 22: ``[19]``).

    Raises:
        OSError: no such process (or no /proc).

    Example:
        >>> stat_fields()[0] in (b"R", b"S")
        True
    """
    with open(f"/proc/{pid}/stat", "rb") as f:
        # The command name in parentheses may hold spaces and ")": split after the last.
        return f.read().rpartition(b")")[2].split()


def pid_namespace(pid: int | str = "self") -> str:
    """The PID namespace of ``pid`` (default: this process; the inode of
    ``/proc/<pid>/ns/pid``), '0' when unknown."""
    try:
        return str(os.stat(f"/proc/{pid}/ns/pid").st_ino)
    except OSError:
        return "0"


def host_id() -> str:
    """Where owner pids mean something: host name plus pid namespace.

    Engines, /tmp and the cgroup tree can be shared (a Docker socket mounted into several dev
    containers, ``unshare --pid``); pids of another namespace must never be judged dead from
    here.
    """
    return f"{socket.gethostname()}:{pid_namespace()}"


def process_start(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot ('' when unknown): guards pid reuse."""
    try:
        return stat_fields(pid)[19].decode()
    except (OSError, IndexError):
        return ""


def owner_alive(pid: int, start: str) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (zombies count as gone)."""
    try:
        fields = stat_fields(pid)
    except OSError:
        try:
            os.kill(pid, 0)  # no /proc: fall back to a signal probe
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    if fields[0] == b"Z":
        return False
    return not start or fields[19].decode() == start


def owner_labels(pool: str, env: str) -> dict[str, str]:
    """Labels for a container owned by this process."""
    pid = os.getpid()
    return {LABEL_PROJECT: "1", LABEL_OWNER_PID: str(pid), LABEL_OWNER_START: process_start(pid),
            LABEL_HOST: host_id(), LABEL_POOL: pool, LABEL_ENV: env}


def project_filter(**labels: str) -> dict[str, Any]:
    """A ``containers.list`` filter for our containers (plus extra label equalities)."""
    return {"label": [f"{LABEL_PROJECT}=1", *(f"{k}={v}" for k, v in labels.items())]}


def remove(container: Any) -> bool:
    """Remove a container by force; False when it was gone or going already (its owner's
    watchdog and ``openenv-gym docker stop`` can race for it)."""
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        if "already in progress" not in str(exc):
            raise
        return False
    return True


def _remove(containers: list[Any]) -> int:
    return sum(remove(c) for c in containers)


def remove_owned(client: Any, pid: int, start: str, host: str) -> int:
    """Remove every container of the owner ``(pid, start, host)``; returns how many."""
    found = client.containers.list(all=True, ignore_removed=True, filters=project_filter(
        **{LABEL_OWNER_PID: str(pid), LABEL_HOST: host}))
    return _remove([c for c in found if c.labels.get(LABEL_OWNER_START, "") == start])


def stale(container: Any, host: str | None = None) -> bool:
    """Whether ``container`` belongs to an owner of this host that is gone."""
    labels = container.labels
    if labels.get(LABEL_HOST) != (host or host_id()):
        return False  # another machine's or namespace's pid: not ours to judge
    try:
        pid = int(labels.get(LABEL_OWNER_PID, ""))
    except ValueError:
        return False
    return not owner_alive(pid, labels.get(LABEL_OWNER_START, ""))


def reap_stale(client: Any) -> int:
    """Remove our containers whose owner (on this host) is gone; returns how many."""
    host = host_id()
    found = client.containers.list(all=True, ignore_removed=True,
                                   filters=project_filter(**{LABEL_HOST: host}))
    return _remove([c for c in found if stale(c, host)])


_watchdog_lock = threading.Lock()
_watchdog_for: list[int] = []  # the pid a watchdog was started for (changes after fork)


def ensure_watchdog() -> None:
    """Start this process's watchdog once (again in a forked child, which is a new owner)."""
    pid = os.getpid()
    with _watchdog_lock:
        if _watchdog_for and _watchdog_for[0] == pid:
            return
        # Run by path, not -m: it then imports neither openenv_gym nor gymnasium while it
        # waits (a few MiB), and docker only once the owner is gone.
        from openenv_gym.providers._runtime import runtime_dir

        cmd = [sys.executable, os.path.abspath(__file__), str(pid), process_start(pid), host_id(),
               runtime_dir()]
        # A session of its own, so the signal that kills the owner's group spares it. It
        # leaves the watch to a child of its own and exits once started (the end of this
        # file); reaped off the caller's path (its interpreter start is ~0.3 s), so the owner
        # holds no child it never waited for, which Python warns of at exit ("subprocess N is
        # still running", an error under -W error).
        starter = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True,
                                   close_fds=True)
        threading.Thread(target=starter.wait, name="openenv-gym-watchdog-start",
                         daemon=True).start()
        _watchdog_for[:] = [pid]


def watch(pid: int, start: str, host: str, runtime: str | None = None) -> None:
    """Wait until the owner is gone, then remove its containers (the watchdog's body).

    Also removes the owner's worker folders under ``runtime`` (the socket a removed
    container leaves behind in its bind-mounted folder).
    """
    while owner_alive(pid, start):
        time.sleep(_POLL_SECONDS)
    import docker

    client = docker.from_env(timeout=60)
    # Twice: a container the owner was creating when it died may appear a moment later.
    for _ in range(2):
        remove_owned(client, pid, start, host)
        time.sleep(1.0)
    remove_owned(client, pid, start, host)
    if runtime and os.path.isdir(runtime):
        from openenv_gym.providers._runtime import remove_folder

        for entry in os.listdir(runtime):
            if entry.startswith(f"{pid}-") and "-docker-w" in entry:
                remove_folder(os.path.join(runtime, entry))


if __name__ == "__main__":
    # Run by path, this file's folder leads sys.path, and its sibling docker.py (our
    # provider) would shadow the docker SDK.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    if os.fork():
        os._exit(0)  # the owner reaps this one only: the watchdog is nobody's child
    watch(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
