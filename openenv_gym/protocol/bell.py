"""The pool's doorbell: one eventfd a trainer rings once after sending a round of requests,
which its workers sleep on between requests instead of on their sockets.

Why: a Unix socket's send wakes a reader asleep on it as a "sync" wake-up (the kernel takes
the sender to sleep next and queues the woken task on the sender's core). A trainer that
sends a vector step to two sleeping workers (after a policy's forward pass, when their spin
for the next request ran out) then has both queued behind it on its own core, or is
preempted by the first between its two sends, and the two env steps run one after the
other. An eventfd's wake-up is not "sync", and one write wakes every worker asleep on it at
once, before any can preempt the trainer. Pong n=2 with a CNN policy: the steps whose two
env steps ran one after the other fell from 53–81% to 16–48%, the whole loop from 0.58–0.78×
to 0.79–0.97× ALE's vector env (``benchmarks/RESULTS.md``, the note "2026-12-06, 09:20").

The bell is a broadcast, never read: each worker waits on it edge-triggered through an epoll
of its own, so a ring wakes every worker of the pool asleep at that moment; each looks at
its own socket and sleeps again if nothing came for it. No worker can take another's
wake-up, a ring nobody waited for costs the next wait one spurious turn, and a worker that
checked its socket just before a request came still sees the ring that followed it (the
epoll holds it). The worker's epoll also watches its socket for the peer hanging up, and
a wait never lasts more than :data:`BACKSTOP_SECONDS`: a request that came without a ring
(a client that does not ring) is still served.

Example:
    >>> import socket
    >>> a, b = socket.socketpair()
    >>> bell = Bell()
    >>> door = BellListener(os.dup(bell.fileno()), b)
    >>> door.wait(0)  # nothing rang
    False
    >>> _ = a.send(b"x"); bell.ring(); door.wait(0)
    True
    >>> door.close(); bell.close()
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading

__all__ = ["Bell", "BellListener", "BACKSTOP_SECONDS", "bell_enabled"]

#: The longest a worker sleeps on the bell before it looks at its socket anyway.
BACKSTOP_SECONDS = 1.0


def bell_enabled() -> bool:
    """Whether a pool gives its workers a bell: on Linux (eventfd, epoll), unless
    ``OPENENV_GYM_BELL=0`` (each worker then sleeps on its socket, as before the bell)."""
    return (hasattr(os, "eventfd") and hasattr(select, "epoll")
            and os.environ.get("OPENENV_GYM_BELL", "1") != "0")


class Bell:
    """The trainer's side: an eventfd that :meth:`ring` writes to; its descriptor goes to each
    worker with the ``slice_open`` request (which keeps its own copy).

    Example:
        >>> bell = Bell()
        >>> bell.ring(); bell.closed
        False
        >>> bell.close(); bell.ring(); bell.closed  # a closed bell rings nothing
        True
    """

    def __init__(self) -> None:
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        #: The process that made it (a forked copy rings its parent's workers: make its own).
        self.pid = os.getpid()
        # Held around each ring and the close: a ring on another thread never writes to a
        # descriptor number that a close freed and a new file took.
        self._lock = threading.Lock()

    def fileno(self) -> int:
        """The eventfd's descriptor (-1 once closed)."""
        return self._fd

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran."""
        return self._fd < 0

    def ring(self) -> None:
        """Wake every worker asleep on the bell (they look at their sockets)."""
        with self._lock:
            fd = self._fd
            if fd < 0:
                return
            try:
                os.eventfd_write(fd, 1)
            except BlockingIOError:
                # The counter is full (nothing reads it; a worker could write it up): empty it.
                try:
                    os.eventfd_read(fd)
                    os.eventfd_write(fd, 1)
                except BlockingIOError:
                    pass  # written up again meanwhile: the workers' backstop still serves them

    def close(self) -> None:
        """Close the trainer's descriptor (the workers' copies close with their connections)."""
        with self._lock:
            fd, self._fd = self._fd, -1
            if fd >= 0:
                os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # (at interpreter exit, os may be gone)
            self.close()


class BellListener:
    """The worker's side: waits for a ring on ``fd`` (a :class:`Bell`'s, which it now owns) or
    for the peer of ``sock`` hanging up.

    Args:
        fd: The bell's descriptor, as it came with ``slice_open``.
        sock: The connection it came on.

    Raises:
        ValueError: ``fd`` is not an eventfd (it is closed).
    """

    def __init__(self, fd: int, sock: socket.socket) -> None:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:[eventfd]":
                raise ValueError(f"descriptor {fd} is not an eventfd")
            os.set_inheritable(fd, False)  # not for the processes an env starts
            self._epoll = select.epoll(2)
            self._epoll.register(fd, select.EPOLLIN | select.EPOLLET)
            self._epoll.register(sock, select.EPOLLRDHUP)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep until a ring, the peer hanging up, or ``timeout`` seconds (default:
        :data:`BACKSTOP_SECONDS`).

        Returns:
            Whether anything woke it before the timeout.
        """
        return bool(self._epoll.poll(BACKSTOP_SECONDS if timeout is None else timeout))

    def close(self) -> None:
        """Stop listening and close the bell's descriptor."""
        if self._fd >= 0:
            self._epoll.close()
            os.close(self._fd)
            self._fd = -1
