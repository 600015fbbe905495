"""The per-user runtime folder that every provider's workers live in, and keeping it clean.

Local workers (the process provider's, a Docker worker's bind-mounted socket folder, a Ray
actor's server) serve on Unix sockets in folders of :func:`runtime_dir`, named
``<owner pid>-<pool>``. An owner killed with SIGKILL cannot remove its folders; the next
owner's first use of the folder, the fork server of an owner that died, and
``openenv-gym docker stop`` sweep them (:func:`sweep_orphans`).

Example:
    >>> import os
    >>> path = runtime_dir()
    >>> os.path.basename(path) == f"openenv-gym-{os.getuid()}" and oct(os.stat(path).st_mode & 0o777)
    '0o700'
    >>> check_socket_path(os.path.join(path, "p1", "w0.sock"))  # short enough: no error
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _cgroup

__all__ = ["runtime_dir", "MAX_SOCKET_PATH", "check_socket_path", "python_command", "remove_folder",
           "remove_orphaned_folders", "sweep_orphans", "worker_environ"]


def runtime_dir(sweep: bool = True) -> str:
    """The per-user folder that holds worker sockets and logs (mode 0700).

    Args:
        sweep: On this process's first call, remove what owners that are gone left there
            (:func:`sweep_orphans`).
    """
    path = os.path.join(tempfile.gettempdir(), f"openenv-gym-{os.getuid()}")
    if not os.path.isdir(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
    elif sweep and not _reaped:
        _reaped.append(True)
        sweep_orphans(path)
    return path


_reaped: list[bool] = []


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


def remove_orphaned_folders(root: str, prefix: str = "") -> None:
    """Remove the folders in ``root`` named ``<prefix><owner pid>-...`` whose owner no longer
    runs: an owner killed with SIGKILL (a trainer, a Ray actor) leaves its folder behind,
    which the next owner started there removes."""
    for entry in os.listdir(root):
        pid = entry[len(prefix):].split("-", 1)[0] if entry.startswith(prefix) else ""
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            remove_folder(os.path.join(root, entry))


def sweep_orphans(path: str) -> None:
    """Remove what owners that are gone left behind: their pool folders in ``path`` (a
    :func:`runtime_dir`, folders named ``<owner pid>-<pool>``) and their workers' cgroups."""
    _cgroup.reap_stale()
    remove_orphaned_folders(path)


def worker_environ(trainer_path: bool = False) -> dict[str, str]:
    """The environment a local worker runs with: this one, with this package importable.

    Args:
        trainer_path: Also the folder Python put first on this process's ``sys.path`` (the
            trainer's script folder, else its current one; :func:`_path_head`), for a worker
            started with :func:`python_command`: it then imports what the trainer imports from
            there (an env module beside the script), and nothing that merely sits in the
            current folder.
    """
    env = dict(os.environ)
    # The worker must import this very package, also when it runs from a source checkout.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    entries = (root, _path_head() if trainer_path else None, env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in entries if p))
    return env


def python_command() -> list[str]:
    """How a local worker's interpreter starts (``+ ["-m", module, ...]``).

    ``-P`` (Python 3.11+): ``-m`` would put the worker's current folder (the trainer's) first
    on its ``sys.path``, where a ``numpy.py`` or ``queue.py`` that the trainer never imports
    would shadow the real module in every worker. What the trainer does import from its own
    first folder reaches the worker through ``worker_environ(trainer_path=True)`` instead.
    """
    return [sys.executable, "-P"] if sys.version_info >= (3, 11) else [sys.executable]


def _path_head() -> str | None:
    """The folder Python put first on this process's ``sys.path``: the script's folder
    (``python train.py``), else the current one (``-m``, ``-c``, a notebook); None under
    ``-P`` or ``-I``, where it put none."""
    if getattr(sys.flags, "safe_path", False) or sys.flags.isolated:
        return None
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path and getattr(main, "__spec__", None) is None:  # run as a script, not with -m
        return os.path.dirname(os.path.realpath(path))
    head = sys.path[0] if sys.path else ""
    return os.path.abspath(head or os.curdir)  # -m: the folder it started in; '': the current one
