"""A stop request that a signal handler may make: :class:`StopFlag`."""

from __future__ import annotations

import math
import os
import select
from typing import Any

__all__ = ["StopFlag"]


class StopFlag:
    """What ``threading.Event`` is to a stop request, but safe to set from a signal handler.

    ``Event.set()`` takes the Event's lock, which the main thread holds for a moment in each
    ``Event.wait()``. Python runs signal handlers on the main thread, so a signal landing in
    that moment (a second Ctrl-C right after the first, which woke the wait) made the thread
    wait for itself for good. :meth:`set` takes no lock: it sets a flag and writes a byte to
    a pipe that :meth:`wait` polls, in any thread. The pipe is never drained: once set,
    the flag stays set.

    Example:
        >>> flag = StopFlag()
        >>> flag.wait(0.01), flag.is_set()
        (False, False)
        >>> flag.set()
        >>> flag.wait(5.0)
        True
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()  # not inherited by children (PEP 446)
        os.set_blocking(self._write, False)
        self._set = False

    def set(self, *_signal: Any) -> None:
        """Request the stop; usable as a signal handler (``signal.signal(SIGTERM, flag.set)``)."""
        self._set = True
        try:
            os.write(self._write, b"\0")
        except OSError:  # full: a byte waits already
            pass

    def is_set(self) -> bool:
        """Whether the stop was requested."""
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the stop is requested or ``timeout`` seconds pass.

        Returns:
            Whether it was requested.
        """
        if not self._set:
            # poll, not select: select refuses a descriptor past 1023, which this pipe's is in
            # a process that holds many (`start` makes its flag after all its workers started).
            poller = select.poll()  # one per call: a poll object refuses two threads at once
            poller.register(self._read, select.POLLIN)
            poller.poll(None if timeout is None else max(0, math.ceil(timeout * 1000)))
        return self._set

    def __del__(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except (OSError, AttributeError):
                pass
