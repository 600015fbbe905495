"""The hardening defaults of worker containers: the one place they are written down.

Every worker container runs with :data:`HARDENING` (non-root, no capabilities, read-only root,
memory/CPU/pids limits, no network, ...). An env overrides them through
``EnvInfo.container_options`` in the catalog, a caller through
``provider_options={"container_options": {...}}``; a value of ``None`` removes a setting.

Example:
    >>> opts = container_options({"mem_limit": "256m"})
    >>> opts["mem_limit"], opts["memswap_limit"], opts["network_mode"]
    ('256m', '256m', 'none')
    >>> "network_mode" in container_options({"network_mode": None})
    False
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

__all__ = ["CONTAINER_UID", "WORKER_UIDS", "HARDENING", "container_options", "executable_tmp",
           "untrusted_options", "with_own_uid"]

#: The unprivileged user worker containers run as (created in ``containers/Dockerfile``).
CONTAINER_UID = 10001
#: Each worker container runs as a uid of its own, drawn from ``CONTAINER_UID + 1`` ..
#: ``CONTAINER_UID + WORKER_UIDS`` (all in the image's /etc/passwd): the kernel counts
#: RLIMIT_NPROC per uid across every container of the machine, while a child's budget is
#: computed from the processes its own container shows (:meth:`~openenv_gym.envs._exec.Limits.resolved`).
WORKER_UIDS = 4096

_MiB = 1024 * 1024

#: Keyword arguments of docker-py's ``containers.run`` that every worker gets by default.
HARDENING: dict[str, Any] = {
    "user": f"{CONTAINER_UID}:{CONTAINER_UID}",
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "read_only": True,
    # The only writable places; size-limited so a runaway env cannot fill the host's disk.
    # /tmp is noexec (Docker's default); /workspace, the env's own work area, may hold
    # programs it runs. (Docker 20.10 ignores a tmpfs "mode": ownership is set instead.)
    # Files too are bounded, one per KiB of size: a tmpfs otherwise allows half the host's
    # RAM pages (3M here), and 200,000 empty folders made in 6 s of a step cost the worker
    # 17 s more to remove after it, every further second of the step ~3.
    "tmpfs": {
        "/tmp": "rw,nosuid,nodev,size=64m,nr_inodes=65536",
        "/workspace": f"rw,nosuid,nodev,exec,size=256m,nr_inodes=262144,uid={CONTAINER_UID},"
                      f"gid={CONTAINER_UID}",
    },
    "mem_limit": "1g",
    "memswap_limit": "1g",  # equal to mem_limit: no swap, so a memory bomb is OOM-killed
    "nano_cpus": 1_000_000_000,  # one CPU
    # Threads count as pids: the threaded server needs one per connection, so 64 is too
    # tight for a worker that hosts a whole vector env's sessions.
    "pids_limit": 128,
    "ulimits": [
        {"name": "nofile", "soft": 1024, "hard": 1024},
        {"name": "fsize", "soft": 256 * _MiB, "hard": 256 * _MiB},
    ],
    "init": True,  # tini reaps zombies and forwards SIGTERM to the server
    "network_mode": "none",  # the server is reached through a bind-mounted Unix socket
    # The container's stdout/stderr is kept by the engine in a file on the host's disk, which
    # no tmpfs, fsize limit or quota of the container bounds: anything that reaches the
    # worker's log (a traceback per bad request to Git-v0's git server; with confine=False,
    # any write to /proc/1/fd/1) must not grow it without end. Two 1 MiB files keep the
    # last lines that error messages and `openenv-gym docker logs` show.
    "log_config": {"type": "json-file", "config": {"max-size": "1m", "max-file": "2"}},
}


def container_options(*overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge overrides over :data:`HARDENING`, later ones winning.

    Args:
        *overrides: Mappings of ``containers.run`` keyword arguments (per env, then per call).
            ``None`` as a value removes the default; a new ``mem_limit`` without a
            ``memswap_limit`` also sets the latter (still no swap), and removing it removes both.

    Returns:
        The keyword arguments for ``containers.run`` (a fresh copy).
    """
    merged = copy.deepcopy(HARDENING)
    for layer in overrides:
        if not layer:
            continue
        for key, value in layer.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = copy.deepcopy(value)
        if "mem_limit" in layer and "memswap_limit" not in layer:
            # Docker refuses a swap limit without a memory limit: the two go together.
            if merged.get("mem_limit"):
                merged["memswap_limit"] = merged["mem_limit"]
            else:
                merged.pop("memswap_limit", None)
    return merged


def executable_tmp() -> dict[str, Any]:
    """Overrides for an env whose sandboxes (under ``/tmp``) hold programs the agent runs:
    :data:`HARDENING`'s tmpfs mounts with ``/tmp`` executable.

    Git tasks are repositories, and a repository's scripts are run as ``./build.sh``, which
    ``noexec`` refuses ("Permission denied") on both providers while ``bash build.sh`` works:
    it is no boundary against code that can already run an interpreter. The boundary is the
    uid, the capabilities, Landlock, seccomp and the limits, which stay.

    Example:
        >>> executable_tmp()["tmpfs"]["/tmp"]
        'rw,nosuid,nodev,exec,size=64m,nr_inodes=65536'
    """
    tmpfs = dict(HARDENING["tmpfs"])
    tmpfs["/tmp"] = tmpfs["/tmp"].replace(",size=", ",exec,size=", 1)
    return {"tmpfs": tmpfs}


def untrusted_options(env: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """What a process worker of ``env`` honours of the hardening (its cgroup's limits, its
    private tmpfs): :func:`container_options` with the env's catalog overrides, then the
    caller's; None for a trusted env, whose worker the process provider leaves unlimited.

    Args:
        env: Catalog name.
        overrides: The caller's ``container_options``.
    """
    from openenv_gym.catalog import get_env_info

    info = get_env_info(env)
    return container_options(info.container_options, overrides) if info.untrusted else None


def with_own_uid(options: Mapping[str, Any], uid: int | None = None) -> dict[str, Any]:
    """``options`` with the default user replaced by a uid of the container's own.

    RLIMIT_NPROC is counted by the kernel per uid over the whole machine (every container
    shares the init user namespace), but a child's budget is the processes its own container
    shows plus ``Limits.processes``: with one uid for every worker, a dozen idle workers
    left no child a thread or a subprocess, and processes held in one worker took the budget
    of the children of every other (and of other pools on the machine). A user the caller
    chose is kept.

    Args:
        options: ``containers.run`` options (from :func:`container_options`).
        uid: The uid (default: a random one of the image's ``WORKER_UIDS``).

    Example:
        >>> opts = with_own_uid(container_options(), uid=10042)
        >>> opts["user"], opts["tmpfs"]["/workspace"].endswith("uid=10042,gid=10042")
        ('10042:10042', True)
    """
    out = copy.deepcopy(dict(options))
    if out.get("user") != HARDENING["user"]:
        return out
    if uid is None:
        import secrets
        uid = CONTAINER_UID + 1 + secrets.randbelow(WORKER_UIDS)
    out["user"] = f"{uid}:{uid}"
    old = f"uid={CONTAINER_UID},gid={CONTAINER_UID}"
    out["tmpfs"] = {path: opts.replace(old, f"uid={uid},gid={uid}")
                    for path, opts in (out.get("tmpfs") or {}).items()}
    return out
