"""Removing what an env's sandboxed children left, whatever they did to it.

A child runs as the worker's user, and Landlock covers neither ``chmod`` nor the ``chattr``
ioctl: it can leave a folder without read or search permission (which stops a plain
``rmtree`` of a worker that is not root, such as Docker's) or, as root, mark files immutable.
Coding-v0's sandboxes and Git-v0's workspaces are emptied and removed through here.

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

__all__ = ["empty_folder", "make_removable", "remove_tree", "unfreeze"]


def remove_tree(path: str) -> None:
    """Remove ``path`` and all it holds, even a folder a child locked: when a plain removal
    fails, the owner's rights are given back (:func:`make_removable`) and it is removed again.
    What still cannot be removed stays (never raises)."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError:
        make_removable(path)
        shutil.rmtree(path, ignore_errors=True)


def empty_folder(folder: str, keep: tuple[str, ...] = ()) -> None:
    """Remove everything in ``folder`` but the entries in ``keep`` (full paths).

    ``folder`` itself may have been locked too (Coding's ``runs/``). When the first sweep
    fails, the owner's rights are given back and the immutable flags cleared, once.

    Raises:
        OSError: Something is still there after that.
    """
    try:
        _sweep(folder, keep)
    except OSError:
        make_removable(folder)
        _sweep(folder, keep)


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


def make_removable(tree: str) -> None:
    """Give the owner full rights on every folder in ``tree`` and clear the immutable and
    append-only flags of its folders and regular files (links are not followed)."""
    unfreeze(tree)
    os.chmod(tree, 0o700)
    for parent, folders, files in os.walk(tree):  # top-down: a folder is fixed before it is listed
        for name in folders + files:
            path = os.path.join(parent, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                unfreeze(path)
                os.chmod(path, 0o700)
            elif stat.S_ISREG(mode):
                unfreeze(path)


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
        flags = array.array("i", [0])
        fcntl.ioctl(fd, _GETFLAGS, flags, True)
        if flags[0] & _FROZEN:
            flags[0] &= ~_FROZEN
            fcntl.ioctl(fd, _SETFLAGS, flags, True)
    except OSError:
        pass  # no flags on this file system, or not ours to clear: the retry will say
    finally:
        os.close(fd)
