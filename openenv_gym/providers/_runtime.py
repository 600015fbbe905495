"""The per-user runtime folder that every provider's workers live in, and keeping it clean.

Local workers (the process provider's, a Docker worker's bind-mounted socket folder, a Ray
actor's server) serve on Unix sockets in folders of :func:`runtime_dir`, named
``<owner pid>-<pool>``. An owner killed with SIGKILL cannot remove its folders; the next
owner's first use of the folder, the fork server of an owner that died, and
``openenv-gym docker stop`` sweep them (:func:`sweep_orphans`). Each pool folder names its
owner in an :data:`OWNER_FILE` (pid, start time, PID namespace), so a sweep never takes a live
owner of another PID namespace, or a reused pid, for a dead one; and the runtime folder must be
the user's own (:func:`runtime_dir` refuses one another user made first).

Example:
    >>> import os
    >>> path = runtime_dir()
    >>> os.path.basename(path) == f"openenv-gym-{os.getuid()}" and oct(os.stat(path).st_mode & 0o777)
    '0o700'
    >>> check_socket_path(os.path.join(path, "p1", "w0.sock"))  # short enough: no error
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from typing import Any

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _cgroup
from openenv_gym.providers._docker_owner import host_id, owner_alive, pid_namespace, process_start

__all__ = ["runtime_dir", "MAX_SOCKET_PATH", "OWNER_FILE", "check_socket_path", "make_owned_folder",
           "TRAINER_PATH", "apply_trainer_path", "python_command",
           "remove_folder", "remove_orphaned_folders", "sweep_orphans", "worker_environ", "write_json"]

#: The file in each pool folder that names its owner: pid, start time and PID namespace.
OWNER_FILE = ".owner"


def runtime_dir(sweep: bool = True) -> str:
    """The per-user folder that holds worker sockets and logs (mode 0700).

    Args:
        sweep: On this process's first call, remove what owners that are gone left there
            (:func:`sweep_orphans`).
    """
    path = os.path.join(tempfile.gettempdir(), f"openenv-gym-{os.getuid()}")
    created = not os.path.isdir(path)
    if created:
        os.makedirs(path, mode=0o700, exist_ok=True)
    _check_private(path)
    if not created and sweep and not _reaped:
        _reaped.append(True)
        sweep_orphans(path)
    return path


_reaped: list[bool] = []


def _check_private(path: str) -> None:
    """Refuse a runtime folder that is not this user's own (its name is predictable: another
    local user can make it first, then move, replace or read what lives in it: the workers'
    sockets, the pool records that ``stop`` signals, links that the sweep follows); close one
    that is ours but open to others."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        what = ("a link or a file, not a folder" if not stat.S_ISDIR(st.st_mode)
                else f"owned by uid {st.st_uid}, not by you ({os.getuid()})")
        raise ProviderUnavailableError(
            f"the runtime folder {path} is not a folder of yours ({what}): another user may have "
            "made it to take over your workers' sockets. Remove it (as its owner or root), or set "
            "TMPDIR to a private folder")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


#: Longest path a Unix socket address holds (``sun_path`` is 108 bytes with its NUL).
MAX_SOCKET_PATH = 107


def check_socket_path(path: str) -> None:
    """Refuse a worker socket path too long to connect to, before anything starts.

    Raises:
        ProviderUnavailableError: It is longer than :data:`MAX_SOCKET_PATH` bytes.
    """
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ProviderUnavailableError(
            f"the worker socket {path} is {len(os.fsencode(path))} bytes, longer than the "
            f"{MAX_SOCKET_PATH} a Unix socket address holds; set TMPDIR to a shorter folder "
            "(such as /tmp) or use a shorter pool name")


def remove_folder(path: str) -> None:
    """Remove a pool or worker folder of :func:`runtime_dir` and all it holds.

    A Docker worker's folder is closed to writes (0555) once its worker serves; only root
    may delete in it then, so it is opened to its owner first.
    """
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def make_owned_folder(path: str) -> None:
    """Create a pool folder (``<runtime_dir>/<owner pid>-...``) for this process, with the
    :data:`OWNER_FILE` that lets :func:`remove_orphaned_folders` judge its owner: a pid alone
    names another process in another PID namespace (a container or ``unshare --pid`` sharing
    this /tmp) or after the pid is reused."""
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        # The runtime folder went meanwhile (rm -rf /tmp/*, a tmp cleaner) and a worker's
        # restart makes it again: as runtime_dir() makes it (0700, not the umask's 0755),
        # since a Docker worker's folder is open to all (0777) while its container starts.
        os.makedirs(parent, mode=0o700, exist_ok=True)
    _check_private(parent)  # and not one another user made first under the predictable name
    os.makedirs(path, mode=0o700, exist_ok=True)
    owner = os.path.join(path, OWNER_FILE)
    if os.path.exists(owner):  # another worker of the pool made it
        return
    pid = os.getpid()
    write_json(owner, {"pid": pid, "start": process_start(pid), "host": host_id()})


def write_json(path: str, data: Any, indent: int | None = None) -> None:
    """Write ``data`` as JSON to ``path`` whole (a temp file, then a rename): a reader, a
    sweep or ``openenv-gym ps``, never sees half of it."""
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=indent)
        os.replace(tmp, path)
    except BaseException:
        # A failed write (a folder in the file's place, a full disk) leaves no temp file,
        # one more each time it is tried again.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _owner_gone(folder: str, pid: int) -> bool:
    """Whether the owner of a pool folder (``pid`` from its name) is gone, as far as this
    process can tell: an owner of another PID namespace never is."""
    try:
        with open(os.path.join(folder, OWNER_FILE), encoding="utf-8") as f:
            owner = json.load(f)
        host, start = owner["host"], str(owner.get("start", ""))
    except (OSError, ValueError, TypeError, KeyError):
        # No owner file (a folder of an older version, a Ray actor's): judge by the pid.
        return not os.path.exists(f"/proc/{pid}")
    if host != host_id():
        return False  # its pid means another process here: not ours to judge
    return not owner_alive(pid, start)


def remove_orphaned_folders(root: str, prefix: str = "") -> None:
    """Remove the folders in ``root`` named ``<prefix><owner pid>-...`` whose owner no longer
    runs: an owner killed with SIGKILL (a trainer, a Ray actor) leaves its folder behind,
    which the next owner started there removes. Only real folders (a link is left alone),
    and only of owners of this PID namespace (see :func:`make_owned_folder`)."""
    orphaned = []
    for entry in os.listdir(root):
        pid = entry[len(prefix):].split("-", 1)[0] if entry.startswith(prefix) else ""
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        folder = os.path.join(root, entry)
        if os.path.isdir(folder) and not os.path.islink(folder) and _owner_gone(folder, int(pid)):
            orphaned.append(folder)
    _kill_workers_of(orphaned, root)
    for folder in orphaned:
        remove_folder(folder)


def _kill_workers_of(folders: list[str], root: str) -> None:
    """SIGKILL this user's processes still serving from one of ``folders`` (``--owner-dir
    FOLDER``), in one pass over ``/proc``: a worker of a dead owner that could not notice it is
    gone, being stopped (SIGSTOP) or hung in native code that holds the GIL, would otherwise
    run on for good.

    Also those serving from a folder in ``root`` that no longer exists, whose owner
    (``--owner-pid``, of this PID namespace) is gone: the first worker of a pool to see its
    owner gone removes the pool's folder, which a stopped sibling shares.
    """
    targets = {os.fsencode(folder) for folder in folders}
    prefix = os.fsencode(os.path.join(root, ""))
    own_ns = pid_namespace()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != os.getuid():
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            args = dict(zip(argv, argv[1:]))
            folder = args.get(b"--owner-dir")
            if folder is None or folder not in targets and not (
                    folder.startswith(prefix) and not os.path.exists(folder)
                    and pid_namespace(entry) == own_ns and _owner_gone_for(int(entry), args)):
                continue
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(entry), signal.SIGKILL)


def _owner_gone_for(worker: int, args: dict[bytes, bytes]) -> bool:
    """Whether the owner a worker's arguments name (``--owner-pid``) is gone: not running, or
    its pid now another process's, one started after the worker."""
    owner = args.get(b"--owner-pid", b"")
    if not owner.isdigit():
        return False
    owner_start, worker_start = process_start(int(owner)), process_start(worker)
    if not owner_alive(int(owner), ""):
        return True
    return bool(owner_start and worker_start) and int(owner_start) > int(worker_start)


def sweep_orphans(path: str) -> None:
    """Remove what owners that are gone left behind: their pool folders in ``path`` (a
    :func:`runtime_dir`, folders named ``<owner pid>-<pool>``) and their workers' cgroups."""
    _cgroup.reap_stale()
    remove_orphaned_folders(path)


def worker_environ(trainer_path: bool = False) -> dict[str, str]:
    """The environment a local worker runs with: this one, with this package importable.

    Args:
        trainer_path: Also this process's own ``sys.path`` folders (:func:`_trainer_path`:
            the script's folder, pytest's rootdir, what a script put there itself), in
            :data:`TRAINER_PATH`, for a worker started with :func:`python_command` that calls
            :func:`apply_trainer_path`: it then imports what the trainer imports, and nothing
            that merely sits in the current folder. Not on ``PYTHONPATH``: Python imports
            from there already at startup (``site`` and ``.pth`` files import ``random``,
            ``types``, ``enum``...), where the trainer's own first folder is not yet on its
            path, so a ``random.py`` beside the script would kill every worker.
    """
    env = dict(os.environ)
    # The worker must import this very package, also when it runs from a source checkout.
    # Installed (a site-packages folder), it does so by itself: that folder on PYTHONPATH
    # would come ahead of the standard library, where the trainer has it after, and a stdlib
    # backport in it (PyPI's argparse, dataclasses, enum34) would shadow the real module.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if root not in _site_folders():
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in (root, env.get("PYTHONPATH")) if p))
    if trainer_path:
        env[TRAINER_PATH] = json.dumps(_trainer_path())
    else:
        env.pop(TRAINER_PATH, None)
    return env


def _site_folders() -> set[str]:
    """The site-packages folders this interpreter's ``site`` puts on ``sys.path`` (a worker's
    too: same interpreter, same environment)."""
    import site

    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return {os.path.abspath(f) for f in folders}


#: The variable that carries the trainer's ``sys.path`` to its workers (:func:`worker_environ`).
TRAINER_PATH = "OPENENV_GYM_TRAINER_PATH"


def apply_trainer_path() -> None:
    """In a worker (after Python's startup): put the trainer's folders on ``sys.path`` where
    they are on the trainer's: those ahead of the standard library first, the ones it
    appended last (:data:`TRAINER_PATH`)."""
    try:
        front, tail = json.loads(os.environ.get(TRAINER_PATH) or "[[], []]")
    except ValueError:
        return
    sys.path[:0] = [p for p in dict.fromkeys(front) if p not in sys.path]
    sys.path.extend(p for p in dict.fromkeys(tail) if p not in sys.path)


def python_command() -> list[str]:
    """How a local worker's interpreter starts (``+ ["-m", module, ...]``).

    ``-P``: ``-m`` would put the worker's current folder (the trainer's) first
    on its ``sys.path``, where a ``numpy.py`` or ``queue.py`` that the trainer never imports
    would shadow the real module in every worker. What the trainer does import from its own
    ``sys.path`` reaches the worker through ``worker_environ(trainer_path=True)`` instead.
    """
    return [sys.executable, "-P"]


def _trainer_path() -> tuple[list[str], list[str]]:
    """This process's ``sys.path``, made absolute, split where the standard library starts:
    ahead of it Python's first folder (the script's, else the current one; none under
    ``-P``/``-I``), ``PYTHONPATH`` and what was put first since (pytest's rootdir and test
    folders, ``sys.path.insert(0, ...)``); after it the installed packages and what was
    appended since."""
    path = [os.path.abspath(p or os.curdir) for p in sys.path if isinstance(p, str)]
    stdlib = os.path.dirname(os.__file__)
    zipped = f"python{sys.version_info[0]}{sys.version_info[1]}.zip"
    start = next((i for i, p in enumerate(path) if p == stdlib or os.path.basename(p) == zipped), None)
    if start is None:  # an interpreter without the usual layout: its first folder only
        return path[:1], []
    return path[:start], path[start:]
