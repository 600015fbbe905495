"""The worker pool behind a vector env: which env lives on which worker, and the fan-out.

Each worker hosts a contiguous group of sub-envs as one slice (:mod:`openenv_gym.vector.slices`:
a session per env, columns in shared memory). A vector step or reset sends ONE
``slice_step`` to every worker involved and other vector operations (``call``,
``render``, ...) ONE ``batch`` message, then gathers the replies: the
workers compute concurrently while the trainer waits on sockets, with no thread or
process per env on the trainer's side (measured faster than a thread per worker here,
see ``benchmarks/RESULTS.md``). A worker that fails is reported per worker, never raised
mid-gather, so the replies of the healthy workers are always read and every connection
stays in frame.

Example:
    >>> from openenv_gym.providers import get_provider
    >>> pool = WorkerPool(get_provider("process"), "echo", num_envs=3, envs_per_worker=2)
    >>> pool.groups
    [[0, 1], [2]]
    >>> replies = pool.exchange({w: [{"op": "reset"} for _ in g] for w, g in enumerate(pool.groups)})
    >>> [len(r) for r in replies.values()]
    [2, 1]
    >>> pool.close()
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from typing import Any, Callable, Union

from openenv_gym.client.env import not_replaceable_in_fork
from openenv_gym.client.transport import BinaryClient, settle_together
from openenv_gym.protocol import ops
from openenv_gym.protocol.bell import Bell, bell_enabled
from openenv_gym.protocol.sockets import available_cores
from openenv_gym.protocol.wire import encode, oversized
from openenv_gym.errors import (
    InvalidActionError,
    InvalidRequestError,
    OpenEnvError,
    ProtocolError,
    ProviderUnavailableError,
    WorkerConnectionError,
    WorkerCrashedError,
    WorkerError,
    error_to_wire,
)
from openenv_gym.providers.base import Provider, Worker, naming_fd_limit, run_together, stop_when_dropped
from openenv_gym.vector.slices import RemoteSlice, shares

__all__ = ["WorkerPool", "WorkerFailure"]


class WorkerFailure:
    """What went wrong with one worker during an exchange (kept, not raised).

    Args:
        worker: The worker's index in the pool.
        error: The exception the exchange hit (crash, timeout, lost connection).
    """

    def __init__(self, worker: int, error: Exception) -> None:
        self.worker = worker
        self.error = error

    def __repr__(self) -> str:
        return f"WorkerFailure(worker={self.worker}, error={self.error!r})"


Reply = Union[list[dict[str, Any]], WorkerFailure]


class WorkerPool:
    """``ceil(num_envs / envs_per_worker)`` workers of one env, and a session per sub-env.

    Args:
        provider: Where the workers run.
        env: Catalog name of the env.
        num_envs: Number of sub-envs.
        envs_per_worker: Sub-envs each worker hosts (the last may host fewer).
        env_kwargs: Keyword arguments for every sub-env's constructor.
        timeout: Seconds a worker may take to answer one exchange.
    """

    def __init__(self, provider: Provider, env: str, num_envs: int, envs_per_worker: int = 1,
                 env_kwargs: dict[str, Any] | None = None, timeout: float = 60.0) -> None:
        self.provider = provider
        #: The process that started the workers: only it replaces or stops them.
        self.owner_pid = os.getpid()
        #: The process whose slices :attr:`slices` are (a fork's copy opens its own).
        self._slices_pid = self.owner_pid
        self.num_envs = num_envs
        self.timeout = timeout
        n_workers = math.ceil(num_envs / envs_per_worker)
        self.groups: list[list[int]] = [
            list(range(w * envs_per_worker, min(num_envs, (w + 1) * envs_per_worker)))
            for w in range(n_workers)
        ]
        #: Worker index of each sub-env.
        self.worker_of: list[int] = [w for w, group in enumerate(self.groups) for _ in group]
        self.workers: list[Worker] = provider.start(env, n_workers, env_kwargs or {})
        self._stop_workers = stop_when_dropped(self, provider, self.workers)
        # Spin for replies only with a core to spare: a trainer spinning beside as many busy
        # workers as cores slows them down (measured in benchmarks/RESULTS.md).
        spin = n_workers < available_cores()
        self.clients = [BinaryClient(w.address, timeout, spin=spin, timeout_name="step_timeout")
                        for w in self.workers]
        #: Each worker's slice, once :meth:`open_slices` ran.
        self.slices: list[RemoteSlice] = []
        #: Rung once after each round of sends; the workers sleep on it between requests
        #: (protocol/bell.py). Made with the shared slices, for workers on this host.
        self._bell: Bell | None = None
        self._slice_args: tuple[Any, ...] = ()
        self._send_failed: dict[int, WorkerFailure] = {}
        #: The worker whose reply came last in the last step: :meth:`receive_slices` reads it first.
        self._last = 0
        #: Held while a thread sends to or reads from the workers' connections: close() from
        #: another thread wakes that thread (interrupt) and waits for it to let go of them,
        #: instead of closing descriptors it is polling (whose numbers the next socket opened,
        #: e.g. the Docker engine's, takes over) and emptying the slices it is reading.
        self._io = threading.RLock()

    def set_timeout(self, seconds: float) -> None:
        """Let every worker take up to ``seconds`` per exchange from now on."""
        self.timeout = seconds
        for client in self.clients:
            client.timeout = seconds

    def open_slices(self, observation_space: Any, action_space: Any, shared: bool | None = None,
                    info_types: dict[str, str] | None = None) -> None:
        """Open a slice on every worker: its envs' sessions and their shared columns.

        Args:
            observation_space: The single env's observation space.
            action_space: The single env's action space.
            shared: Columns in shared memory (None: for workers on this host).
            info_types: The env's declared infos (its ``spec``'s), which get columns.
        """
        self._slice_args = (observation_space, action_space, shared, info_types)
        opened: list[RemoteSlice] = []
        with naming_fd_limit(f"opening the shared memory of {len(self.workers)} workers"):
            try:
                for w in range(len(self.workers)):
                    opened.append(self._open_slice(w))
            except WorkerError as exc:
                self._let_go(opened)
                if self.owned:
                    raise
                # A fork's copy, whose parent stopped the workers (closed its env, or exited):
                # a bare "cannot connect" would not say that trying again cannot help.
                raise type(exc)(f"{self.describe(w, exc)}\n{self._not_ours(w)}") from exc
            except BaseException:
                self._let_go(opened)
                raise
        # Only once all opened: a fork's copy that failed stays inherited, so its next reset
        # tries again (instead of stepping a pool with no slices).
        self.slices, self._slices_pid = opened, os.getpid()

    @property
    def slices_pid(self) -> int:
        """The process that opened :attr:`slices` (the owner's until they open; in a fork, the
        last process whose slices opened whole)."""
        return self._slices_pid

    @property
    def owned(self) -> bool:
        """Whether this process made the workers (not a fork's copy): only it may replace them."""
        return os.getpid() == self.owner_pid

    @property
    def inherited(self) -> bool:
        """Whether :attr:`slices` are not this process's to drive: a forked parent's (their
        sessions are the parent's envs and their columns its shared memory), or a fork's own
        that its worker ended with a dropped connection (a call timed out or was interrupted),
        or none (a fork's own could not open: its parent had stopped the workers). Each way
        the next reset opens new ones (:meth:`own_slices`)."""
        pid = os.getpid()  # checked on every step: the owner's answer costs one compare
        if pid == self.owner_pid:
            return False  # only a fork opens slices other than the owner's
        return self._slices_pid != pid or not self.slices or any(piece.ended() for piece in self.slices)

    def own_slices(self) -> None:
        """In a fork of the owner, open slices of this process's own on the same workers (new
        sessions, new shared memory), letting go of this copy of the parent's mapping (or of
        this fork's own slices, ending those still open)."""
        if not self.inherited:
            return
        self._end_own_slices()
        for piece in self.slices:
            piece.release()  # unmaps this process's copy only
        self.slices = []
        self.open_slices(*self._slice_args)

    def _end_own_slices(self) -> None:
        """End the sessions of a fork's own slices still open on its parent's workers
        (stopping the workers, which ends them otherwise, is the parent's to do)."""
        if self._slices_pid == os.getpid():
            self._end_sessions(self.slices)

    def _end_sessions(self, slices: list[RemoteSlice]) -> None:
        """In a fork of the owner, end the sessions of ``slices`` (``slices[w]`` on worker
        ``w``) that are still open."""
        if os.getpid() == self.owner_pid:
            return
        for w, piece in enumerate(slices):
            if not piece.ended():
                with contextlib.suppress(Exception):
                    # Unordered: a call cut short need not finish first (it finds its session gone).
                    self.clients[w].request(ops.batch([ops.close(sid) for sid in piece.sids]),
                                            timeout=5.0, ordered=False)

    def _let_go(self, slices: list[RemoteSlice]) -> None:
        """Let go of the slices of an :meth:`open_slices` that failed part way: a fork's
        sessions would otherwise live on its parent's workers as long as its connections."""
        self._end_sessions(slices)
        for piece in slices:
            piece.release()

    def _not_ours(self, worker: int) -> str:
        return not_replaceable_in_fork(f"worker {worker}", self.owner_pid,
                                       "make the child's own vector env")

    def _open_slice(self, worker: int) -> RemoteSlice:
        observation_space, action_space, shared, info_types = self._slice_args
        client = self.clients[worker]
        return RemoteSlice(client, observation_space, action_space,
                           len(self.groups[worker]), shared, info_types,
                           bound=os.getpid() != self.owner_pid,
                           bell=self._own_bell() if shares(client, shared) else None)

    def _own_bell(self) -> Bell | None:
        """This process's bell (a fork's copy makes its own, for its own slices), or None
        where there is none (see :func:`~openenv_gym.protocol.bell.bell_enabled`). Only a
        slice in shared memory gets it (a worker on this host: a descriptor cannot cross TCP)."""
        if not bell_enabled():
            return None
        if self._bell is None or self._bell.pid != os.getpid():
            self._bell = Bell()
        return self._bell

    def sid(self, env: int) -> str | None:
        """The session id of sub-env ``env`` on its worker (None before the slices open)."""
        if not self.slices:
            return None
        w = self.worker_of[env]
        return self.slices[w].sids[env - self.groups[w][0]]

    def request(self, worker: int, message: dict[str, Any]) -> dict[str, Any]:
        """One plain request to one worker (spec, health)."""
        return self.clients[worker].request(message)

    def exchange(self, calls: dict[int, list[dict[str, Any]]],
                 timeout: float | None = None) -> dict[int, Reply]:
        """Send each worker its calls as one ``batch`` message, then gather every reply.

        Args:
            calls: Worker index -> the sub-requests for it, in order.
            timeout: Seconds each worker may take (default: the pool's).

        Returns:
            Worker index -> its sub-replies (each ``{"ok": ..., ...}``, in order), or a
            :class:`WorkerFailure` when the worker crashed, hung or is unreachable.

        Raises:
            InvalidRequestError, TypeError: A call the wire cannot carry (or a message larger
                than it carries); every message is encoded and measured before any is sent,
                so then no worker got anything.
        """
        workers = list(calls)
        self._send_each(workers, [encode(ops.batch(calls[w])) for w in workers], timeout)
        return self._gather(workers, lambda w: self.clients[w].receive()["results"],
                            lambda w, error: [{"ok": False, "error": error}] * len(calls[w]))

    def send_slices(self, workers: list[int], extras: dict[int, dict[str, Any]] | None = None,
                    timeout: float | None = None) -> None:
        """Ask each of ``workers`` to run the commands in its slice's ``cmd`` column (with
        ``extras[w]``: what has no column); pair with :meth:`receive_slices`.

        Raises:
            InvalidRequestError, TypeError: A value in ``extras`` the wire cannot carry (a
                lone surrogate in a text action); every frame is encoded before any is
                sent, so then no worker got anything and every connection is in frame.
            InvalidActionError: The actions in a worker's ``extras`` make its message larger
                than the wire carries; nothing was sent either.
        """
        slices = self.slices
        frames = [slices[w].frame(extras.get(w) if extras else None) for w in workers]
        for w, frame in zip(workers, frames):
            if extras and "actions" in extras.get(w, ()) \
                    and (why := oversized(frame, self.clients[w].max_frame)) is not None:
                # As a single env's step refuses it: typed as the action's fault, before any
                # worker got anything (the worker would drain the frame, then refuse it).
                several = len(self.groups[w]) > 1
                raise InvalidActionError(
                    f"the actions are too large: the step message for {self._envs(w)} is {why}; "
                    "nothing was sent and no env stepped"
                    + ("; fewer envs_per_worker puts fewer actions in each message" if several else ""))
        self._send_each(workers, frames, timeout)

    def _envs(self, worker: int) -> str:
        group = self.groups[worker]
        return f"env {group[0]}" if len(group) == 1 else f"envs {group[0]}..{group[-1]} (worker {worker})"

    def receive_slices(self, workers: list[int]) -> dict[int, dict[str, Any] | WorkerFailure]:
        """Gather the slice replies of ``workers`` (results now in each slice's columns).

        The reply read first is that of the worker which answered last the step before, so
        the wait for it usually ends with every other reply there: the trainer sleeps once a
        step instead of being woken by each reply in turn, on a core where a worker may still
        be computing (2 workers on 2 cores: Pong 4-9% faster where the late worker was not the
        first read, ``benchmarks/RESULTS.md``). A reply that had not come when it was read
        marks its worker as the last.
        """
        last = self._last
        if workers and workers[0] != last and last in workers:
            k = workers.index(last)
            workers = workers[k:] + workers[:k]  # the others' order does not matter
        replies = self._gather(workers, lambda w: self.slices[w].receive(),
                               lambda w, error: {"errors": dict.fromkeys(range(len(self.groups[w])), error)})
        for w in workers[1:]:
            if self.clients[w].waited and not isinstance(replies[w], WorkerFailure):
                self._last = w
        return replies

    def _send_each(self, workers: list[int], frames: list[bytes], timeout: float | None = None) -> None:
        """Send each worker its frame (``frames[k]`` to ``workers[k]``); a failed worker is
        remembered for :meth:`_gather`, and an interrupt drops every connection a request may
        have gone out on.

        Workers still running a call cut short by Ctrl-C are waited for all at once first
        (within ``timeout``): each send waiting for its own in turn would add up the timeouts
        of hung workers (eight hung workers: eight timeouts before the reset restarts them).

        Raises:
            InvalidRequestError: A frame is larger than the wire carries; nothing was sent.
        """
        for w, frame in zip(workers, frames):
            if (why := oversized(frame, self.clients[w].max_frame)) is not None:
                raise InvalidRequestError(f"the message for {self._envs(w)} is {why}; nothing was sent")
        with self._io:
            try:
                clients = self.clients
                unsettled = settle_together(clients, workers, timeout)
                for w, frame in zip(workers, frames):
                    try:
                        if w in unsettled:
                            raise unsettled[w]
                        clients[w].send_frame(frame, timeout, ring=False)
                    except (WorkerError, OSError) as exc:
                        self._send_failed[w] = WorkerFailure(w, exc)
                if self._bell is not None:
                    # Once, after every request is out: a wake-up for each would let the
                    # first worker woken preempt this process before the next send.
                    self._bell.ring()
            except BaseException:
                self._interrupted(workers)
                raise

    def _gather(self, workers: list[int], read: Callable[[int], Any],
                refused: Callable[[int, dict[str, Any]], Any]) -> dict[int, Any]:
        """Read each worker's reply; a failed worker becomes a :class:`WorkerFailure`, never an
        exception, so every other reply is still read and every connection stays in frame."""
        with self._io:
            failed, self._send_failed = self._send_failed, {}
            out: dict[int, Any] = {}
            try:
                for w in workers:
                    if w in failed:
                        out[w] = failed[w]
                        continue
                    try:
                        out[w] = read(w)
                    except (WorkerError, ProtocolError, OSError) as exc:
                        out[w] = WorkerFailure(w, exc)
                    except OpenEnvError as exc:
                        # The worker refused the whole message (e.g. a reply the wire cannot
                        # carry): it is alive and in frame, so each of its envs gets that error.
                        out[w] = refused(w, error_to_wire(exc))
            except BaseException:
                self._interrupted([w for w in workers if w not in out])
                raise
            return out

    def _interrupted(self, workers: list[int]) -> None:
        """An exchange was cut short (Ctrl-C): the replies still due from ``workers`` would be
        read as answers to the next requests, so their connections are dropped (the next
        request reconnects) and the exchange is forgotten. A connection whose reply was read
        already, or has come whole (it is read and dropped here), or which nothing was sent on,
        is in frame and kept: dropping it would only reconnect, and end a fork's bound slice
        there."""
        self._send_failed = {}
        due = [w for w in workers if self.clients[w].owed]
        try:
            # A reply that came while the step waited on another worker (read before it) is
            # there whole: taking it keeps that connection too.
            for w in due:
                self.clients[w].discard_arrived_reply()
        finally:
            for w in due:
                if self.clients[w].owed:
                    self.clients[w].drop()

    def restart(self, worker: int) -> None:
        """Replace a failed worker with a fresh one; its sub-envs lose their sessions.

        Raises:
            WorkerError: This process is a fork of the owner, whose worker it is.
        """
        if os.getpid() != self.owner_pid:
            raise WorkerError(self._not_ours(worker))
        self.clients[worker].close()  # with the call it may still run: it goes with the worker
        self.workers[worker].replace()
        self._reconnect(worker)

    def _reconnect(self, worker: int) -> None:
        """Point ``worker``'s connection at its replacement and open its slice there."""
        self.clients[worker].address = self.workers[worker].address
        if self.slices:
            self.slices[worker].release()
            self.slices[worker] = self._open_slice(worker)

    def restart_all(self, workers: list[int]) -> dict[int, Exception]:
        """:meth:`restart` each of ``workers`` at the same time: each stop's grace (a hung
        worker gets SIGTERM, then SIGKILL 2 s later) and each start run beside the others'
        instead of adding up (two hung workers: one grace, not two).

        Args:
            workers: The failed workers.

        Returns:
            Worker -> the exception its restart raised; a worker not in it was restarted.

        Raises:
            KeyboardInterrupt: Ctrl-C: the restarts in flight are waited for (as
                :func:`~openenv_gym.providers.base.run_together` does) and each replacement
                that serves is reached, before the interrupt goes on.
        """
        if os.getpid() != self.owner_pid:
            return {w: WorkerError(self._not_ours(w)) for w in workers}
        for w in workers:
            self.clients[w].close()  # with the call it may still run: it goes with the worker
        replaced: list[int] = []

        def replace(w: int) -> None:
            self.workers[w].replace()
            replaced.append(w)

        errors: dict[int, Exception] = {}
        try:
            failed = run_together([functools.partial(replace, w) for w in workers])[1]
            errors.update((workers[k], exc) for k, exc in failed.items())
        finally:
            # Also when interrupted (Ctrl-C; run_together waited for the replacements in
            # flight): reach each one that started, so that no slice is left on a stopped worker.
            for w in list(replaced):
                try:
                    self._reconnect(w)
                except Exception as exc:  # noqa: BLE001 - handed to the caller
                    errors[w] = exc
        return errors

    def describe(self, worker: int, error: Exception) -> str:
        """One line naming the worker, its envs and what happened, plus its log tail."""
        envs = self.groups[worker]
        text = f"worker {worker} (envs {envs[0]}..{envs[-1]}) failed: {error}"
        if isinstance(error, (WorkerCrashedError, WorkerConnectionError)):
            # Described as soon as its connection dropped, a killed worker still passed for a
            # running one, and the error left out how it ended (as a single env's says).
            with contextlib.suppress(ProviderUnavailableError, OSError):
                self.workers[worker].alive_after()
        reason, tail = self.workers[worker].post_mortem()
        if reason:
            text += f" (the worker {reason})"
        return f"{text}\nlast worker log lines:\n{tail}" if tail else text

    def close(self) -> None:
        """Drop every connection and stop every worker (safe to call twice, and from another
        thread while an exchange is in flight: that exchange ends at once, each worker failed)."""
        for client in self.clients:
            client.interrupt()  # a read or send in flight on another thread fails now
        held = self._io.acquire(timeout=10.0)  # ... and lets go of the connections
        try:
            self._end_own_slices()
            for piece in self.slices:
                piece.release()
            for client in self.clients:
                client.close()  # and a connection still waiting for an interrupted call
            self.slices = []
            if self._bell is not None:
                self._bell.close()  # every worker's copy closes with its connection
        finally:
            if held:
                self._io.release()
        self._stop_workers()
        self.workers, self.clients = [], []
