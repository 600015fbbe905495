"""The few calls a subreaper makes: ``prctl``, this process's children, ending an orphan.

Split from :mod:`openenv_gym.envs._exec` (which re-exports them) and
:mod:`openenv_gym.envs._confine` (``prctl``) so that the fork server
(:mod:`openenv_gym.server.forkserver`), a subreaper of every worker's orphans, needs neither
of those modules: they cost ~20 ms to import, on the path of a trainer's first worker, and
only the workers of envs that run child processes (Coding, Git) use them, which import them
themselves. This module imports nothing of the package and only what the fork server already
has (``ctypes``, ``os``, ``signal``).

Example:
    >>> import subprocess
    >>> child = subprocess.Popen(["sleep", "5"])
    >>> child.pid in own_children()
    True
    >>> end_orphan(child.pid); child.wait()
    -9
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from typing import Container

__all__ = ["PR_SET_CHILD_SUBREAPER", "prctl", "own_children", "end_orphan", "end_orphans"]

#: prctl option: make the calling process the reaper of its descendants' orphans (Linux 3.4+).
#: Not inherited across ``fork``: each process that wants it asks for it itself.
PR_SET_CHILD_SUBREAPER = 36

_prctl = ctypes.CDLL(None, use_errno=True).prctl
_prctl.restype = ctypes.c_int


def prctl(option: int, arg: int) -> bool:
    """``prctl(option, arg)`` on the calling thread; whether the kernel agreed."""
    return _prctl(option, arg, 0, 0, 0) == 0


def own_children() -> list[int]:
    """The children of this process's main thread (where the kernel re-parents orphans to a
    subreaper); [] where the kernel does not list them."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def end_orphan(pid: int) -> None:
    """SIGKILL an adopted orphan (a child not reaped yet: its pid names no other process), and
    its group when it leads one (a step's session leader) other than this process's.

    Raises:
        ProcessLookupError: It is gone already.
    """
    group = os.getpgid(pid)
    if group == pid and group != os.getpgrp():
        os.killpg(group, signal.SIGKILL)
    else:
        os.kill(pid, signal.SIGKILL)


def end_orphans(keep: Container[int] = ()) -> list[int]:
    """:func:`end_orphan` every child of this process's main thread (in a subreaper: the
    orphans re-parented to it) but those in ``keep`` (its own children); gone ones are skipped.

    Returns:
        The pids it signalled.
    """
    ended = []
    for pid in own_children():
        if pid not in keep:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                end_orphan(pid)
                ended.append(pid)
    return ended
