"""A cgroup per process worker: Docker's pids and memory limits, and a clean end, without Docker.

Root ignores ``RLIMIT_NPROC``, so on the process provider a fork bomb that an untrusted
env's code ran as root was bounded by nothing. Where this process may create cgroups
(root, as in CI), the process provider puts each untrusted env's worker into a cgroup of
its own with the ``pids_limit`` and ``mem_limit`` of
:data:`~openenv_gym.providers._docker_hardening.HARDENING` (the same source as a worker
container's). Ending the worker ends every process in its cgroup, however it got there:
a double-forked daemon, or the children of a worker that crashed mid-step, which no
longer have a parent to reap them.

cgroup v1 (a hierarchy per controller; ours nest under this process's own cgroup of each)
and v2 (the unified hierarchy, at its root only: a cgroup that holds processes, like the
trainer's own, cannot hand controllers to children; and only where v2 has the pids and
memory controllers, which a hybrid machine's v2 lacks) are both handled. Anywhere else
:func:`support` says why not, and workers run without one (``openenv-gym doctor``).

Example:
    >>> import subprocess
    >>> group = WorkerCgroup.create("doc", pids=16, memory_bytes=256 << 20)  # None without support
    >>> if group is not None:
    ...     proc = subprocess.Popen(["sleep", "60"])
    ...     group.add(proc.pid)
    ...     assert group.pids() == [proc.pid]
    ...     _ = group.kill(); _ = proc.wait(); group.remove()
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Mapping

from openenv_gym._numbers import is_finite, is_int
from openenv_gym.errors import InvalidRequestError
from openenv_gym.providers._docker_owner import pid_namespace, stat_fields

__all__ = ["own_folders", "PREFIX", "WorkerCgroup", "for_env", "leave", "limits", "reap_stale", "support"]

_ROOT = "/sys/fs/cgroup"
#: A v1 ``memory.limit_in_bytes`` at least this large is no limit.
_V1_NO_LIMIT = 1 << 62

#: Every cgroup the project makes is named ``openenv-gym-<owner pid>@<owner's PID namespace>-<name>``
#: (``openenv-gym-<owner pid>-<name>`` before the namespace was named): the cgroup tree is shared
#: by every PID namespace that sees it (a container, ``unshare --pid``), while a pid names a
#: process only in its own, so an owner is judged only from its own namespace.
PREFIX = "openenv-gym-"


def _owner(entry: str) -> tuple[int, str] | None:
    """``(owner pid, its PID namespace or '')`` from a cgroup's name, None if not ours."""
    owner = entry[len(PREFIX):].split("-", 1)[0]
    pid, _, namespace = owner.partition("@")
    return (int(pid), namespace) if pid.isdigit() else None


#: The controllers a worker's cgroup limits with.
_CONTROLLERS = ("pids", "memory")

_UNITS = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def limits(options: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The pids and memory (bytes) limits in docker-py ``containers.run`` options.

    Args:
        options: What :func:`~openenv_gym.providers._docker_hardening.container_options` gives.

    Returns:
        ``(pids, memory_bytes)``; None where the options set no limit.

    Example:
        >>> limits({"pids_limit": 128, "mem_limit": "1g"})
        (128, 1073741824)
    """
    pids = options.get("pids_limit")
    if pids is not None and not is_int(pids):
        raise InvalidRequestError(f"container_options['pids_limit'] must be a whole number of "
                                  f"processes (0 or less: no limit, as Docker reads it), got {pids!r}")
    # Docker reads a pids_limit of 0 or less as none; written to pids.max it was EINVAL.
    return (int(pids) if pids is not None and pids > 0 else None, _memory_bytes(options.get("mem_limit")))


def _memory_bytes(value: Any) -> int | None:
    """A ``mem_limit`` in bytes, read as docker-py reads it (``1073741824``, ``"1g"``,
    ``"512m"``, ``"512MB"``), so that the docker provider's options serve this one too; None
    (or 0) for no limit.

    Raises:
        InvalidRequestError: Neither a number of bytes >= 0 nor that notation (``"lots"``, -5),
            which failed as ``int()``'s bare ValueError, or writing it as the kernel's EINVAL.

    Example:
        >>> _memory_bytes("512MB"), _memory_bytes(None)
        (536870912, None)
    """
    if value is None:
        return None
    number: Any = value
    unit = 1
    if isinstance(value, str):
        text = value.strip().lower()
        if text[-2:-1].isalpha() and text.endswith("b"):
            text = text[:-1]  # docker-py's "512mb" is "512m"
        if text[-1:] in _UNITS:
            text, unit = text[:-1], _UNITS[text[-1:]]
        try:
            number = float(text)
        except ValueError:
            number = None
    if not (is_finite(number) and number >= 0):
        raise InvalidRequestError(f"container_options['mem_limit'] must be a number of bytes >= 0, "
                                  f"or Docker's notation such as '2g' or '512m' (0 or None: no "
                                  f"limit), got {value!r}")
    return int(number * unit) or None


def for_env(env: str, name: str, container_options: Mapping[str, Any] | None = None) -> "WorkerCgroup | None":
    """The cgroup a worker of ``env`` gets: one for an untrusted env, where this machine allows.

    Args:
        env: Catalog name.
        name: Unique among this process's workers (``"<pool>-w0"``).
        container_options: The caller's overrides of the hardening defaults (after the env's).

    Returns:
        A new cgroup with the env's ``pids_limit`` and ``mem_limit``; None for a trusted env,
        or where :func:`support` says no.
    """
    from openenv_gym.providers._docker_hardening import untrusted_options

    options = untrusted_options(env, container_options)
    return WorkerCgroup.create(name, *limits(options)) if options is not None else None


def _unified() -> bool:
    """Whether /sys/fs/cgroup is cgroup v2's single hierarchy (else v1's, one per controller)."""
    return os.path.exists(os.path.join(_ROOT, "cgroup.controllers"))


def _own_paths() -> dict[str, str]:
    """This process's cgroup per v1 controller (``"pids": "/a/b"``) and ``""`` for v2."""
    out: dict[str, str] = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                out[name] = path
    return out


def own_folders() -> dict[str, str]:
    """This process's cgroup folder per controller mounted here (``""`` for v2's single
    hierarchy), e.g. ``{"pids": "/sys/fs/cgroup/pids/a/b", ...}``. In a container, whose
    hierarchy is mounted at its own cgroup while ``/proc/self/cgroup`` may name the path on
    the host, a folder that does not exist is the mount itself.

    Raises:
        OSError: ``/proc/self/cgroup`` cannot be read.
    """
    mounts = {"": _ROOT} if _unified() else {c: os.path.join(_ROOT, c) for c in _CONTROLLERS}
    out: dict[str, str] = {}
    for controller, path in _own_paths().items():
        if controller in mounts:
            folder = os.path.normpath(os.path.join(mounts[controller], path.lstrip("/")))
            out[controller] = folder if os.path.isdir(folder) else mounts[controller]
    return out


def _bases(enable: bool = False) -> tuple[str, dict[str, str]]:
    """``("v1" | "v2", {controller: folder to create ours in})``, or raise OSError saying why not.

    ``enable``: in v2, hand the pids and memory controllers to the root's children first.
    """
    if _unified():
        own = _own_paths().get("", "/")
        if own != "/":
            raise OSError(f"cgroup v2: this process's cgroup {own} holds processes, so it cannot "
                          "hand the pids and memory controllers to workers' cgroups")
        with open(os.path.join(_ROOT, "cgroup.controllers")) as f:
            unavailable = [c for c in _CONTROLLERS if c not in f.read().split()]
        if unavailable:
            # A hybrid machine mounts v2 beside v1, which holds these controllers.
            raise OSError(f"cgroup v2: no {' or '.join(unavailable)} controller at {_ROOT} "
                          "(bound to a cgroup v1 hierarchy, or off in the kernel)")
        control = os.path.join(_ROOT, "cgroup.subtree_control")
        with open(control) as f:
            missing = [c for c in _CONTROLLERS if c not in f.read().split()]
        if missing and enable:
            with open(control, "w") as f:
                f.write(" ".join("+" + c for c in missing))
        return "v2", {"pids": _ROOT, "memory": _ROOT}
    own = _own_paths()
    bases = {}
    for controller in _CONTROLLERS:
        mount = os.path.join(_ROOT, controller)
        if controller not in own or not os.path.isdir(mount):
            raise OSError(f"cgroup v1: no {controller} controller mounted at {mount}")
        bases[controller] = os.path.join(mount, own[controller].lstrip("/"))
    return "v1", bases


def _writable_bases(enable: bool = False) -> tuple[str, dict[str, str]]:
    """:func:`_bases`, where this process may create cgroups; else OSError saying why not."""
    version, bases = _bases(enable)
    for base in set(bases.values()):
        if not os.access(base, os.W_OK):
            raise OSError(f"cgroup {version}: {base} is not writable (workers get cgroups as root)")
    return version, bases


def support() -> tuple[bool, str]:
    """Whether workers can get cgroups here, and where, or why not.

    Returns:
        ``(True, "cgroup v1 at /sys/fs/cgroup/pids/...")`` or ``(False, reason)``.
    """
    try:
        version, bases = _writable_bases()
    except OSError as exc:
        return False, str(exc)
    return True, f"cgroup {version} at {', '.join(sorted(set(bases.values())))}"


class WorkerCgroup:
    """One worker's cgroup (a folder per v1 controller, one folder in v2).

    Use :meth:`create`; :meth:`add` the worker right after it starts (its children inherit
    the cgroup), :meth:`kill` whatever is left when it ends, then :meth:`remove`.

    Args:
        version: ``"v1"`` or ``"v2"``.
        folders: Controller -> the cgroup's folder (the same folder for both in v2).
    """

    def __init__(self, version: str, folders: dict[str, str]) -> None:
        self.version = version
        self.folders = folders

    @classmethod
    def create(cls, name: str, pids: int | None, memory_bytes: int | None) -> "WorkerCgroup | None":
        """Make ``openenv-gym-<this pid>-<name>`` with the given limits; None where unsupported.

        Args:
            name: Unique among this process's workers (``"<pool>-w0"``).
            pids: Most processes and threads at once (None: no limit).
            memory_bytes: Most memory, swap included (None: no limit).

        Returns:
            The cgroup, or None when this machine gives us none (see :func:`support`).
        """
        try:
            version, bases = _writable_bases(enable=True)
        except OSError:  # none here: support() says why
            return None
        owner = f"{os.getpid()}@{pid_namespace()}"
        folders = {c: os.path.join(base, f"{PREFIX}{owner}-{name}") for c, base in bases.items()}
        group = cls(version, folders)
        try:
            for folder in set(folders.values()):
                os.makedirs(folder, exist_ok=True)
            if pids:
                group._write("pids", "pids.max", pids)
            if memory_bytes:
                if version == "v2":
                    group._write("memory", "memory.max", memory_bytes)
                    group._write("memory", "memory.swap.max", 0, optional=True)
                else:
                    group._write("memory", "memory.limit_in_bytes", memory_bytes)
                    group._write("memory", "memory.memsw.limit_in_bytes", memory_bytes, optional=True)
        except BaseException:  # an interrupt (Ctrl-C) too: the caller never gets it to remove
            group.remove()
            raise
        return group

    def _write(self, controller: str, name: str, value: int, optional: bool = False) -> None:
        path = os.path.join(self.folders[controller], name)
        if optional and not os.path.exists(path):
            return  # e.g. swap accounting off: there is no swap to limit
        with open(path, "w") as f:
            f.write(str(value))

    def add(self, pid: int) -> None:
        """Move process ``pid`` (and so every process it starts from now on) into the cgroup."""
        for folder in set(self.folders.values()):
            with open(os.path.join(folder, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def place(self, proc: Any) -> None:
        """:meth:`add` a just-started worker process; if that fails, end it and raise.

        Call it before the worker serves, so every child of every step is inside; until
        then the worker runs only our own start-up code.

        Raises:
            WorkerError: The process could not be moved (it was terminated).
        """
        try:
            self.add(proc.pid)
        except OSError as exc:
            from openenv_gym.errors import WorkerError
            from openenv_gym.providers.base import terminate

            terminate(proc)
            raise WorkerError(f"could not put the worker into its cgroup {self.folders['pids']}: {exc}; "
                              "pass provider_options={'cgroups': False} to run without") from exc

    def pids(self) -> list[int]:
        """The processes in the cgroup now (zombies not yet reaped excepted)."""
        try:
            with open(os.path.join(self.folders["pids"], "cgroup.procs")) as f:
                listed = [int(p) for p in f.read().split()]
        except OSError:
            return []
        return [pid for pid in listed if not _zombie(pid)]

    def limit(self, controller: str) -> int | None:
        """The limit set on ``"pids"`` or ``"memory"`` (None: none)."""
        name = {"pids": "pids.max", "memory": "memory.max" if self.version == "v2" else "memory.limit_in_bytes"}
        try:
            with open(os.path.join(self.folders[controller], name[controller])) as f:
                text = f.read().strip()
        except OSError:
            return None
        if text == "max":
            return None
        # v1 shows "no memory limit" as a number near 2**63 (the largest page count, in bytes).
        return None if int(text) >= _V1_NO_LIMIT else int(text)

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this cgroup at its memory limit."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            with open(os.path.join(self.folders["memory"], name)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def kill(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup, until none is left or ``timeout`` passes.

        Returns:
            Whether the cgroup is empty.
        """
        end = time.monotonic() + timeout
        kill_file = os.path.join(self.folders["pids"], "cgroup.kill")
        while True:
            left = self.pids()
            if not left:
                return True
            if time.monotonic() > end:
                return False
            if os.path.exists(kill_file):
                with open(kill_file, "w") as f:
                    f.write("1")
            else:
                # v1 has no cgroup.kill. A process forking meanwhile is caught by the next
                # round; the pids limit bounds how many there can be.
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            time.sleep(0.005)

    def close(self) -> None:
        """:meth:`kill` what is left, then :meth:`remove`."""
        self.kill()
        self.remove()

    def remove(self) -> None:
        """Remove the cgroup's folders (empty ones only: call :meth:`kill` first)."""
        for folder in set(self.folders.values()):
            try:
                os.rmdir(folder)
            except FileNotFoundError:
                pass
            except OSError:
                pass  # still populated (a process in D state): reap_stale removes it later


def leave() -> bool:
    """Move this process out of its worker cgroup into the parent and remove the cgroup.

    For a worker whose owner is gone, so nobody else will: it calls this last, after
    ending its children. A process not in a cgroup of ours is left where it is.

    Returns:
        Whether a cgroup of ours was removed.
    """
    removed = False
    for folder in own_folders().values():
        if not os.path.basename(folder).startswith(PREFIX):
            continue
        try:
            with open(os.path.join(os.path.dirname(folder), "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            os.rmdir(folder)
            removed = True
        except OSError:
            pass  # still populated, or not ours to change: reap_stale removes it later
    return removed


def _zombie(pid: int) -> bool:
    try:
        return stat_fields(pid)[0] == b"Z"
    except (OSError, IndexError):
        return True  # already gone


def _foreign(bases: dict[str, str], entry: str, here: str) -> bool:
    """Whether a cgroup named without its owner's namespace (an older version's) holds
    processes of another PID namespace than ``here`` (its owner lived there)."""
    try:
        with open(os.path.join(bases["pids"], entry, "cgroup.procs")) as f:
            pids = f.read().split()
    except OSError:
        return False
    for pid in pids:
        try:
            if here and str(os.stat(f"/proc/{pid}/ns/pid").st_ino) != here:
                return True
        except OSError:
            continue
    return False


def reap_stale() -> int:
    """Empty and remove the cgroups of owners that are gone (killed before they could).

    Returns:
        How many cgroups were removed.
    """
    try:
        version, bases = _bases()
    except OSError:
        return 0
    entries: set[str] = set()
    for base in set(bases.values()):
        try:
            entries.update(e for e in os.listdir(base) if e.startswith(PREFIX))
        except OSError:
            continue
    removed = 0
    here = pid_namespace()
    for entry in entries:
        owner = _owner(entry)
        if owner is None or os.path.exists(f"/proc/{owner[0]}"):
            continue
        if owner[1] != here and (owner[1] or _foreign(bases, entry, here)):
            continue  # its owner's pid means another process here: not ours to judge
        group = WorkerCgroup(version, {c: os.path.join(base, entry) for c, base in bases.items()})
        try:
            group.kill(timeout=1.0)
        except OSError:
            continue  # another user's (root's): not ours to end, and no reason to fail a start
        group.remove()
        removed += not any(os.path.exists(folder) for folder in group.folders.values())
    return removed
