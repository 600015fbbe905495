"""This process's process budget: how many more processes and threads it may start.

A worker of an env that runs untrusted code lives in a cgroup (the process provider's) or a
container (Docker's) with a ``pids_limit``, and the cgroups above it (a trainer's own, a
CI job's) may have limits of their own; its connection threads, its env's helper threads
and the sandboxed code's processes all count against them. The binary server reads this
before it takes another connection, so that connections alone cannot use the budget up,
and a worker that cannot start a thread says which limit stopped it.

Example:
    >>> usage = pids_usage()   # (in use, limit) of the tightest pids cgroup, or None
    >>> usage is None or usage[1] > 0
    True
"""

from __future__ import annotations

import functools
import os
import resource

from openenv_gym.providers._cgroup import own_folders

__all__ = ["pids_usage", "process_budget"]


@functools.cache
def _pids_folders() -> tuple[str, ...]:
    """The folders of this process's pids cgroup and its ancestors (none where none is
    visible). Found once: a worker is in its cgroup before it serves (the process provider
    places it while it is held), and stays there; each connection then reads only counters."""
    try:
        own = own_folders()
    except OSError:
        return ()
    folder = own.get("pids", own.get(""))
    folders: list[str] = []
    # Up to the hierarchy's root: every cgroup folder has a cgroup.procs, what holds it not.
    while folder and os.path.exists(os.path.join(folder, "cgroup.procs")):
        folders.append(folder)
        parent = os.path.dirname(folder)
        folder = parent if parent != folder else ""
    return tuple(folders)


def _usage(folder: str) -> tuple[int, int] | None:
    try:
        with open(os.path.join(folder, "pids.max")) as f:
            limit = f.read().strip()
        with open(os.path.join(folder, "pids.current")) as f:
            current = int(f.read())
    except (OSError, ValueError):
        return None  # the root cgroup has neither; "max" is no limit
    return None if limit == "max" else (current, int(limit))


def pids_usage() -> tuple[int, int] | None:
    """``(in use, limit)`` of the pids cgroup (this process's or an ancestor's) with the least
    room left; None without any limit (or without cgroups).

    Example:
        >>> pids_usage() is None or isinstance(pids_usage()[1], int)
        True
    """
    found = [u for u in map(_usage, _pids_folders()) if u is not None]
    return min(found, key=lambda u: u[1] - u[0]) if found else None


def process_budget() -> str:
    """What bounds this process's processes and threads, for an error message.

    Example:
        >>> "processes" in process_budget()
        True
    """
    parts = []
    usage = pids_usage()
    if usage is not None:
        parts.append(f"its cgroup allows {usage[1]} processes and threads, {usage[0]} in use "
                     "(pids.max; a worker's own is its pids_limit)")
    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if soft != resource.RLIM_INFINITY and os.geteuid() != 0:  # root ignores RLIMIT_NPROC
        parts.append(f"this user may run {soft} processes and threads (ulimit -u)")
    return "; ".join(parts) or "no limit of this process's processes is visible (the machine's: kernel.threads-max)"
