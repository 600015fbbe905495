"""A private, size-limited temp folder for a worker: Docker's ``/tmp`` tmpfs without Docker.

Coding and Git sandboxes live under :func:`tempfile.gettempdir`. In a container that is a
64 MiB tmpfs; a process worker wrote them to the host's disk, bounded per file (RLIMIT_FSIZE)
but not in total, so sandboxed code could fill the disk. A process worker of an untrusted
env now starts (where this process may mount: :func:`support`) in a mount namespace of its own, with a tmpfs
of the size and flags of :data:`~openenv_gym.providers._docker_hardening.HARDENING`'s ``/tmp``
mounted on a folder that becomes its ``TMPDIR``. Nobody else sees the files; they are gone
with the worker, however it ends (even by SIGKILL: the namespace dies with it).

Call :func:`mount_private_tmp` first thing in the worker, before it starts threads: a
mount namespace belongs to the thread that makes it, and threads started later inherit it.

Example:
    >>> tmpfs_options("rw,nosuid,nodev,size=64m")  # Docker's defaults add noexec
    (14, 'size=64m,mode=0700')
"""

from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import sys
import tempfile
from typing import Any, Mapping

__all__ = ["mount_private_tmp", "spec_for_env", "support", "tmpfs_options", "unmount_private_tmp"]

_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000
_MNT_DETACH = 2

#: Mount flags by the option words Docker accepts for a tmpfs.
_FLAGS = {"nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": _MS_NOEXEC}


def spec_for_env(env: str, container_options: Mapping[str, Any] | None = None) -> str | None:
    """The tmpfs a process worker of ``env`` gets: Docker's ``/tmp`` for an untrusted env, where
    this process may mount one (:func:`support`); None otherwise.

    Args:
        env: Catalog name.
        container_options: The caller's overrides of the hardening defaults (after the env's).

    Returns:
        A Docker tmpfs spec (``"rw,nosuid,nodev,size=64m"``), or None.
    """
    from openenv_gym.providers._docker_hardening import untrusted_options

    options = untrusted_options(env, container_options)
    if options is None:
        return None
    tmpfs = options.get("tmpfs", {})
    if isinstance(tmpfs, (list, tuple)) and all(isinstance(entry, str) for entry in tmpfs):
        # docker-py's other form: ["/tmp:size=1g", "/workspace"]
        tmpfs = dict((*entry.split(":", 1), "")[:2] for entry in tmpfs)
    if not (isinstance(tmpfs, Mapping) and all(isinstance(spec, str) for spec in tmpfs.values())):
        # .get() of a str was a bare AttributeError, naming no option
        from openenv_gym.errors import InvalidRequestError

        raise InvalidRequestError(f"container_options['tmpfs'] must map each folder to its tmpfs "
                                  f"options, as docker-py takes it (such as {{'/tmp': "
                                  f"'rw,size=1g'}}), got {tmpfs!r}")
    return tmpfs.get("/tmp") if support()[0] else None


@functools.lru_cache(maxsize=1)
def support() -> tuple[bool, str]:
    """Whether workers started from this process can mount their private tmpfs, and why not.

    Tried once, for real, in a short-lived child running :func:`mount_private_tmp`: being
    root is not enough (root in a container without CAP_SYS_ADMIN, or under a seccomp or
    AppArmor profile that refuses ``mount``, cannot), and a worker that was promised the
    tmpfs and cannot mount it fails to start.

    Returns:
        ``(True, "")`` or ``(False, reason)``.
    """
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False, "not root (mounting a tmpfs needs CAP_SYS_ADMIN)"
    probe = tempfile.mkdtemp(prefix="openenv-gym-tmpfs-probe-")
    # This file alone, not the package: the child must not pay for importing gymnasium.
    code = ("import importlib.util as u, sys\n"
            "spec = u.spec_from_file_location('_tmpfs', sys.argv[1])\n"
            "module = u.module_from_spec(spec)\n"
            "spec.loader.exec_module(module)\n"
            "module.mount_private_tmp(sys.argv[2], 'size=1m')\n")
    try:
        out = subprocess.run([sys.executable, "-I", "-S", "-c", code, __file__, probe],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"the mount probe did not run: {exc}"
    finally:
        os.rmdir(probe)  # empty on our side: the mount lived in the child's namespace
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return False, lines[-1] if lines else f"the mount probe exited with {out.returncode}"
    return True, ""


def tmpfs_options(spec: str) -> tuple[int, str]:
    """The ``mount(2)`` flags and data of a Docker tmpfs spec (``"rw,nosuid,nodev,size=64m"``).

    Docker mounts a tmpfs ``noexec,nosuid,nodev`` unless the spec says ``exec``/``suid``/``dev``;
    this does the same. The folder is root's alone (mode 0700) unless the spec sets a mode.

    Args:
        spec: Comma-separated options, as in ``HARDENING["tmpfs"]``.

    Returns:
        ``(flags, data)`` for ``mount("tmpfs", path, "tmpfs", flags, data)``.
    """
    words = [w.strip() for w in spec.split(",") if w.strip()]
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    data = []
    for word in words:
        if word in _FLAGS:
            flags |= _FLAGS[word]
        elif word in ("exec", "suid", "dev"):
            flags &= ~_FLAGS["no" + word]
        elif word not in ("rw",):
            data.append(word)  # size=, mode=, uid=, gid=, nr_inodes=
    if not any(d.startswith("mode=") for d in data):
        data.append("mode=0700")
    return flags, ",".join(data)


def mount_private_tmp(path: str, spec: str) -> None:
    """Move this thread into a mount namespace of its own, mount a tmpfs on ``path`` there and
    make it the temp folder (``TMPDIR``, :data:`tempfile.tempdir`).

    Args:
        path: An existing, empty folder (the provider makes one beside the worker's socket).
        spec: Docker tmpfs options (``"rw,nosuid,nodev,size=64m"``).

    Raises:
        OSError: The kernel refused (mounting needs root: CAP_SYS_ADMIN).
    """
    libc = _libc()
    flags, data = tmpfs_options(spec)

    def check(result: int, what: str) -> None:
        if result != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"private temp folder: {what}: {os.strerror(err)}")

    check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # Our mounts must not propagate back to the host's namespace.
    check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    check(libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", flags, data.encode()), f"mount tmpfs on {path}")
    os.environ["TMPDIR"] = path
    tempfile.tempdir = path


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def unmount_private_tmp(path: str) -> None:
    """Drop the tmpfs :func:`mount_private_tmp` put on ``path`` (its files go with it) and
    remove the folder; for a server that made its own mount point and cleans up at exit."""
    _libc().umount2(os.fsencode(path), _MNT_DETACH)
    try:
        os.rmdir(path)
    except OSError:
        pass  # still mounted or not empty: the next provider run's stale-folder sweep takes it
