"""Removing what an env's sandboxed children left, whatever they did to it.

A child runs as the worker's user, and Landlock covers neither ``chmod`` nor the ``chattr``
ioctl: it can leave a folder without read or search permission (which stops a plain
``rmtree`` of a worker that is not root, such as Docker's) or, as root, mark files immutable.
It can also nest folders deeper than ``shutil.rmtree`` (one Python frame per level) or a path
(``PATH_MAX``) reaches. Coding-v0's sandboxes and Git-v0's workspaces are emptied and removed
through here.

Example:
    >>> import os, tempfile
    >>> top = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(top, "locked", "deep"))
    >>> os.chmod(os.path.join(top, "locked"), 0)
    >>> remove_tree(top)
    >>> os.path.exists(top)
    False
"""

from __future__ import annotations

import array
import fcntl
import os
import shutil
import stat

__all__ = ["empty_folder", "remove_tree", "unfreeze"]


def remove_tree(path: str) -> None:
    """Remove ``path`` and all it holds, even a folder a child locked or nested thousands of
    levels deep: when a plain removal fails, it is removed again one level at a time
    (:func:`_remove_deep`). What still cannot be removed stays (never raises)."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except (OSError, RecursionError):
        try:
            _remove_deep(path)
        except OSError:
            pass


def empty_folder(folder: str, keep: tuple[str, ...] = ()) -> None:
    """Remove everything in ``folder`` but the entries in ``keep`` (full paths).

    ``folder`` itself may have been locked too (Coding's ``runs/``). When the first sweep
    fails, what is left is removed one level at a time, each folder's rights given back and
    immutable flags cleared (:func:`_remove_deep`).

    Raises:
        OSError: Something is still there after that.
    """
    try:
        _sweep(folder, keep)
    except (OSError, RecursionError):  # RecursionError: rmtree of folders nested too deep
        unfreeze(folder)
        os.chmod(folder, 0o700)
        with os.scandir(folder) as listing:
            entries = [entry.path for entry in listing if entry.path not in keep]
        for path in entries:
            _remove_deep(path)


def _sweep(folder: str, keep: tuple[str, ...]) -> None:
    """Remove what ``folder`` holds but ``keep``, with no second chance (see :func:`empty_folder`)."""
    os.chmod(folder, 0o700)
    with os.scandir(folder) as listing:
        entries = list(listing)
    for entry in entries:
        if entry.path in keep:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _remove_deep(path: str) -> None:
    """Remove ``path`` and all it holds, at any depth, links not followed: one folder open
    at a time (``..`` leads back up), every name relative to it (no path grows with the
    depth), each folder's rights given back and immutable flag cleared before it is listed,
    an immutable file's before it is unlinked. Only for trees no process writes any more
    (the children that wrote them are dead).

    Raises:
        OSError: Something could not be removed.
    """
    head, name = os.path.split(os.path.abspath(path))
    fd = os.open(head, _FOLDER)
    try:
        if not _is_folder(fd, name):
            _unlink(fd, name)
            return
        names: list[str] = []  # from ``head`` down to the folder ``fd`` is
        pending: list[list[str]] = [[name]]  # per level down to fd's: its folders still to remove
        while pending:
            if pending[-1]:
                target = pending[-1].pop()
                inner = _open_folder(fd, target)
                os.close(fd)
                fd = inner
                names.append(target)
                pending.append(_unlink_all_but_folders(fd))
                continue
            pending.pop()  # fd's folder is empty now: remove it, from its parent
            if not names:
                return
            outer = os.open("..", _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = outer
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)


def _is_folder(fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode)
    except FileNotFoundError:
        return False


def _open_folder(fd: int, name: str) -> int:
    """Open fd's folder ``name`` to list and empty it: the owner's rights given back and its
    immutable flag cleared (an immutable folder refuses the chmod: root, who set it, opens it
    anyway)."""
    try:
        os.chmod(name, 0o700, dir_fd=fd)
    except PermissionError:
        pass
    inner = os.open(name, _FOLDER, dir_fd=fd)
    _unfreeze_fd(inner)
    return inner


def _unlink(fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    except PermissionError:  # immutable or append-only (chattr, as root)
        file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        try:
            _unfreeze_fd(file)
        finally:
            os.close(file)
        os.unlink(name, dir_fd=fd)


def _unlink_all_but_folders(fd: int) -> list[str]:
    """Unlink every entry of the folder ``fd`` but its folders; the names of those (listed
    once: a folder of 100,000 folders is not listed again after each)."""
    folders = []
    with os.scandir(fd) as listing:
        for entry in listing:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                _unlink(fd, entry.name)
    return folders


#: ``FS_IOC_GETFLAGS`` / ``FS_IOC_SETFLAGS`` (64-bit) and the flags that stop a removal.
_GETFLAGS, _SETFLAGS = 0x80086601, 0x40086602
_FROZEN = 0x10 | 0x20  # FS_IMMUTABLE_FL | FS_APPEND_FL


def unfreeze(path: str) -> None:
    """Clear ``chattr +i``/``+a`` on a regular file or folder, where it is set and allowed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        _unfreeze_fd(fd)
    finally:
        os.close(fd)


def _unfreeze_fd(fd: int) -> None:
    """:func:`unfreeze` of an open file or folder."""
    try:
        flags = array.array("i", [0])
        fcntl.ioctl(fd, _GETFLAGS, flags, True)
        if flags[0] & _FROZEN:
            flags[0] &= ~_FROZEN
            fcntl.ioctl(fd, _SETFLAGS, flags, True)
    except OSError:
        pass  # no flags on this file system, or not ours to clear: the removal will say
