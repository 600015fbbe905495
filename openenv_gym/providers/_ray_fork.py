"""Whether this process is a fork of one that had used Ray: Ray's connections (gRPC) do not
survive a fork, and ``ray.init`` or any Ray call in such a fork hangs for good
(``AsyncVectorEnv``'s forked workers, a DataLoader's), even after the parent's
``ray.shutdown()``. Loaded with the providers (without Ray), so that the mark is made at
every fork, also of a process whose Ray env code has not loaded yet.
"""

from __future__ import annotations

import os
import sys

__all__ = ["forked_from_ray_user", "mark_ray_used"]

_used = False  # Ray was connected in this process (by us or the user), at some time
_forked = False  # this process is a fork of one that had used Ray


def mark_ray_used() -> None:
    """Note that this process connected to Ray (its forks cannot)."""
    global _used
    _used = True


def forked_from_ray_user() -> bool:
    """Whether this process is a fork of one that had used Ray."""
    return _forked


def _after_fork_in_child() -> None:
    global _forked
    ray = sys.modules.get("ray")  # a parent that never imported Ray never used it
    _forked = _forked or _used or (ray is not None and ray.is_initialized())


os.register_at_fork(after_in_child=_after_fork_in_child)
