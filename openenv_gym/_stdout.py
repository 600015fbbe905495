"""What a process does when nobody reads its standard output any more (``| head -1``).

Example:
    >>> callable(stdout_to_devnull)
    True
"""

from __future__ import annotations

import contextlib
import os
import sys

__all__ = ["stdout_to_devnull"]


def stdout_to_devnull() -> None:
    """Point stdout's descriptor at ``/dev/null`` after a write met a closed pipe: Python
    flushes stdout again at exit, and would report the closed pipe there (``Exception ignored
    ... BrokenPipeError``), and later writes then go nowhere quietly."""
    with contextlib.suppress(OSError, ValueError):  # (no stdout at all: nothing to do)
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
