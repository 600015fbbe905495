"""The provider interface: where workers run (local processes, containers, a Ray cluster).

A :class:`Provider` starts :class:`Worker` objects, each an env server reachable at a
binary :attr:`Worker.address`. Clients only ever talk to that address; everything about
*where* the server runs stays behind this interface.

Example:
    >>> from openenv_gym.providers import get_provider
    >>> provider = get_provider("process")
    >>> workers = provider.start("echo", n=1)
    >>> workers[0].alive()
    True
    >>> provider.stop_all(workers)
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import errno
import functools
import gc
import json
import logging
import os
import resource
import subprocess
import threading
import time
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, ClassVar, Iterator, Protocol, Sequence, TypeVar

from openenv_gym._gym_ids import importable_env_id
from openenv_gym._numbers import is_finite, is_flag
from openenv_gym.errors import (
    EnvServerError,
    InvalidRequestError,
    OpenEnvError,
    ProviderUnavailableError,
    WorkerConnectionError,
    WorkerError,
)
from openenv_gym.protocol.sockets import connect
from openenv_gym.protocol.startup import TUPLE_KEY, failure_in

__all__ = ["Worker", "Provider", "stop_when_dropped", "track", "untrack", "naming_fd_limit",
           "wait_ready", "startup_error", "terminate", "env_kwargs_json", "run_together",
           "checked_startup_timeout", "check_flags", "RESTART_ATTEMPTS", "EXIT_GRACE"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Starts :meth:`Worker.replace` tries before it gives up.
RESTART_ATTEMPTS = 3


#: Seconds :meth:`Worker.alive_after` waits, by default, for a worker whose connection dropped to end.
EXIT_GRACE = 0.5


class Worker(abc.ABC):
    """One running env server.

    Attributes:
        address: Binary address (``unix://...`` or ``tcp://127.0.0.1:PORT``); may change on
            :meth:`restart`.
        restarts: How many times it was restarted.
        last_exit: Why the worker the last restart replaced had stopped (``"killed by signal
            9 (SIGKILL)"``; ``"replaced while running"`` for a hung one), None before any.

    Example:
        >>> import gymnasium as gym
        >>> envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=2)
        >>> worker = envs.unwrapped.workers[0]
        >>> worker.alive(), worker.restarts, worker.address.startswith("unix://")
        (True, 0, True)
        >>> envs.close()
    """

    address: str
    restarts: int = 0
    last_exit: str | None = None

    @abc.abstractmethod
    def alive(self) -> bool:
        """Whether the worker process/container is still running."""

    @abc.abstractmethod
    def restart(self) -> None:
        """Replace the worker with a fresh one and wait until it serves (address re-read)."""

    def replace(self) -> None:
        """:meth:`restart` a failed worker, starting it again when a start fails: for a passing
        reason (a machine under load past ``startup_timeout``, a Docker engine hiccup), which
        must not end a training run. Each start counts in :attr:`restarts`.

        Raises:
            ProviderUnavailableError: At once: nowhere to start one (the engine or Ray gone).
            Exception: The last start's error, after :data:`RESTART_ATTEMPTS` starts failed.
        """
        for attempt in range(1, RESTART_ATTEMPTS + 1):
            try:
                self.restart()
                return
            except ProviderUnavailableError:
                raise
            except Exception as exc:
                if attempt == RESTART_ATTEMPTS:
                    raise
                logger.warning("openenv-gym: starting a replacement worker failed (try %d of %d), "
                               "trying again: %s", attempt, RESTART_ATTEMPTS, exc)

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the worker and free what it held (process, container, socket file)."""

    def logs(self, tail: int = 50) -> str:
        """The last lines of the worker's output, for error messages."""
        return ""

    def _note_exit(self) -> None:
        """Keep why the worker about to be replaced stopped, as :attr:`last_exit`."""
        self.last_exit = self.exit_reason() or "replaced while running"

    def exit_reason(self) -> str:
        """Why the worker stopped (``"killed by signal 9 (SIGKILL)"``); ``""`` while it runs
        or where the provider cannot tell."""
        return ""

    def alive_after(self, grace: float = EXIT_GRACE) -> bool:
        """Wait up to ``grace`` seconds for the worker to stop; returns whether it still runs.

        A worker's connection closes as it dies, a moment before its provider can tell how it
        ended: wait this long after a dropped connection, so that :meth:`exit_reason` (an
        error's "killed by signal 9 (SIGKILL)") does not come up empty.
        """
        deadline = time.monotonic() + grace
        while (alive := self.alive()) and time.monotonic() < deadline:
            time.sleep(0.01)
        return alive

    def post_mortem(self, tail: int = 5) -> tuple[str, str]:
        """:meth:`exit_reason` and the last ``tail`` log lines, for an error message about it;
        ``("", "")`` when they cannot be had, which must never mask the error being explained."""
        try:
            return self.exit_reason(), self.logs(tail=tail).strip()
        except (ProviderUnavailableError, OSError):
            # The Docker engine is down (raised as ProviderUnavailableError) or its connection
            # broke mid-read (docker-py's requests errors are OSErrors); a vanished container
            # and a lost Ray actor are reported by the workers themselves, not raised.
            return "", ""


class Provider(abc.ABC):
    """Starts workers of one kind.

    Subclasses set :attr:`name` and implement :meth:`_start_one`. Build one with
    :func:`~openenv_gym.providers.get_provider`.

    Example:
        >>> from openenv_gym.providers import get_provider
        >>> provider = get_provider("process")
        >>> [worker] = provider.start("echo", 1)
        >>> worker.alive()
        True
        >>> provider.stop_all([worker])
    """

    name: ClassVar[str]
    #: Seconds after which a worker closes a session nobody calls (None: never, as an env or
    #: vector env that owns its workers needs). ``openenv-gym start`` sets it: its pools
    #: outlive the trainers that attach to them, and one killed without ``close()`` would
    #: otherwise hold its sessions until the pool's session limit refuses every new one.
    idle_timeout: float | None = None

    @classmethod
    def available(cls) -> tuple[bool, str]:
        """Whether this provider can run here, and if not, why and how to fix it."""
        return True, ""

    @abc.abstractmethod
    def _start_one(self, env: str, env_kwargs: dict[str, Any], index: int, pool: str) -> Worker:
        """Start one worker and return it once it serves."""

    def start(self, env: str, n: int = 1, env_kwargs: dict[str, Any] | None = None,
              pool: str | None = None) -> list[Worker]:
        """Start ``n`` workers of ``env`` concurrently and wait until all serve.

        Args:
            env: Catalog name (``"echo"``).
            n: Number of workers.
            env_kwargs: Keyword arguments for the env's constructor.
            pool: Name of the pool (labels, file names); generated when omitted.

        Returns:
            The workers, in order.

        Raises:
            OpenEnvError: The env could not be made, typed as the worker raised it
                (:func:`startup_error`); the other workers are stopped.
            WorkerError: A worker failed to start; the others are stopped.
        """
        pool = pool or f"p{time.time_ns() % 10**10:x}"
        kwargs = dict(env_kwargs or {})
        if env == "gym" and "env_id" in kwargs:
            # A worker is a fresh Python: an id this process has from a package it imported
            # (ALE/Pong-v5 after `import ale_py`) is made there by naming that package's module.
            kwargs["env_id"] = importable_env_id(kwargs["env_id"])
        with naming_fd_limit(f"starting {n} worker(s)"):
            return self._start_all(env, n, kwargs, pool)

    def _start_all(self, env: str, n: int, kwargs: dict[str, Any], pool: str) -> list[Worker]:
        # A failed start fails the pool: those not begun yet are skipped. Each would wait its own
        # timeout (a Ray cluster too small for the pool: its placement_timeout again for every
        # 16 workers) only to be stopped at once.
        started, errors = run_together(
            [functools.partial(self._start_one, env, kwargs, i, pool) for i in range(n)],
            stop_at_error=True, on_interrupt=lambda started: self.stop_all(list(started.values())))
        if errors:
            self.stop_all(list(started.values()))
            raise errors[min(errors)]
        return [started[i] for i in range(n)]

    def stop_all(self, workers: Sequence[Worker]) -> None:
        """Stop workers concurrently (one by one from inside a garbage collection)."""
        if len(workers) <= 1 or _collecting == threading.get_ident():
            # The collector runs a dropped env's finalizer at any allocation of this thread,
            # also inside another ThreadPoolExecutor.submit, which holds the lock every
            # submit takes: a thread pool here would wait for this thread forever.
            for w in workers:
                w.stop()
            return
        try:
            with ThreadPoolExecutor(max_workers=min(len(workers), 16)) as ex:
                list(ex.map(lambda w: w.stop(), workers))
        except RuntimeError:
            # At interpreter exit (an env never closed, stopped by its finalizer) no new thread
            # may start; stopping is idempotent, so finish the rest one by one.
            for w in workers:
                w.stop()
        except BaseException:
            # Interrupted (Ctrl-C) before every stop was handed to a thread: close() runs its
            # finalizer once, so nothing would stop the others until this process exits.
            # Stopping is idempotent: finish them one by one, then let the interrupt through.
            for w in workers:
                with contextlib.suppress(Exception):
                    w.stop()
            raise


def checked_startup_timeout(value: Any) -> float:
    """``provider_options['startup_timeout']`` as seconds, checked when the provider is made.

    Unchecked, ``"60"`` or None failed the first start as a bare ``TypeError`` ("unsupported
    operand type(s) for +"), and 0 or -1 started a worker only to give it up at once, saying
    to give it more time.

    Raises:
        InvalidRequestError: Not a positive, finite number.

    Example:
        >>> checked_startup_timeout(120)
        120.0
    """
    if not (is_finite(value) and value > 0):
        raise InvalidRequestError(f"provider_options['startup_timeout'] must be a positive, finite "
                                  f"number of seconds (default 60), got {value!r}")
    return float(value)


def check_flags(**flags: Any) -> None:
    """Refuse a provider's on/off option that is not ``True`` or ``False``: ``"no"`` or ``"False"``
    from a config file is true to Python, and would turn on what it meant to turn off.

    Raises:
        InvalidRequestError: Naming the first such option.

    Example:
        >>> check_flags(fork=False, cgroups=True)
    """
    for name, value in flags.items():
        if not is_flag(value):
            raise InvalidRequestError(f"provider_options[{name!r}] must be True or False, got {value!r}")


def run_together(calls: Sequence[Callable[[], _T]], stop_at_error: bool = False,
                 on_interrupt: Callable[[dict[int, _T]], None] | None = None,
                 ) -> tuple[dict[int, _T], dict[int, Exception]]:
    """Run ``calls`` at the same time, each on a thread (at most 16 at once), and wait for all:
    the fan-out of worker starts and restarts, whose waits (a start's, a hung worker's stop
    grace) would add up one after the other. A single call runs in this thread, as does one
    whose thread cannot start (a pids limit, interpreter exit).

    Args:
        calls: What to run.
        stop_at_error: Once a call raised, skip the calls not begun yet.
        on_interrupt: When the wait is interrupted (Ctrl-C), called with the results of the
            calls that returned once every call in flight has ended: what they made (workers
            started) must not live on with no one left to own it.

    Returns:
        Index in ``calls`` -> the value of each call that returned, and index -> the exception
        of each that raised; a call skipped (``stop_at_error``) is in neither.

    Raises:
        BaseException: The wait was interrupted (Ctrl-C): the calls not begun are skipped, those
            in flight run on. A thread waits for them and runs ``on_interrupt``, which a second
            Ctrl-C (the wait takes a call's time) does not cut short: it ends only this wait.

    Example:
        >>> run_together([lambda: 1, lambda: 1 / 0])
        ({0: 1}, {1: ZeroDivisionError('division by zero')})
    """
    results: dict[int, _T] = {}
    errors: dict[int, Exception] = {}
    if len(calls) == 1:
        try:
            results[0] = calls[0]()
        except Exception as exc:  # noqa: BLE001 - handed to the caller, call by call
            errors[0] = exc
        return results, errors
    # Each call records its result itself, and says while it runs: a Ctrl-C may land anywhere
    # below, even inside submit() once the call is queued (its future is then never returned)
    # or in a thread join (which, interrupted, may then take a thread still running for ended:
    # CPython's bpo-45274 fix), and everything a call made must still be found.
    claimed: set[int] = set()
    running: set[int] = set()
    cond = threading.Condition()
    aborted = False

    def run(i: int) -> None:
        nonlocal aborted
        with cond:
            if aborted or i in claimed:  # skipped, or run here as its thread could not start
                return
            claimed.add(i)
            running.add(i)
        try:
            results[i] = calls[i]()
        except Exception as exc:  # noqa: BLE001 - handed to the caller, call by call
            errors[i] = exc
            if stop_at_error:
                with cond:
                    aborted = True
        finally:
            with cond:
                running.discard(i)
                cond.notify_all()

    ex = ThreadPoolExecutor(max_workers=min(len(calls), 16))
    try:
        futures = []
        for i in range(len(calls)):
            try:
                futures.append(ex.submit(run, i))
            except RuntimeError:  # no thread to be had (queued or not: claimed here first)
                run(i)
        for future in futures:
            future.result()
        ex.shutdown(wait=False)  # its threads are idle and end by themselves
    except BaseException:
        with cond:
            aborted = True
        ex.shutdown(wait=False)

        def wait_and_clean_up() -> None:
            with cond:
                while running:
                    cond.wait()
            if on_interrupt is not None:
                on_interrupt(dict(results))

        cleanup = threading.Thread(target=wait_and_clean_up, name="openenv-gym-clean-up-interrupted")
        try:
            cleanup.start()
        except RuntimeError:
            wait_and_clean_up()
        else:
            cleanup.join()
        raise
    return results, errors


def stop_when_dropped(owner: object, provider: Provider, workers: list[Worker]) -> weakref.finalize:
    """Stop ``workers`` once ``owner`` (the env or pool that started them) is garbage-collected,
    so an env dropped without ``close()`` (a notebook cell run again) does not keep its workers
    until the process exits. Calling the returned finalizer stops them now, once: ``close()``.

    Args:
        owner: The object whose lifetime the workers share.
        provider: The provider that started them.
        workers: The workers; the list may change in place (a restart), not be rebound.

    Returns:
        The finalizer.

    Example:
        >>> from openenv_gym.providers import get_provider
        >>> provider = get_provider("process")
        >>> class Owner: pass
        >>> owner = Owner()
        >>> workers = provider.start("echo")
        >>> stop = stop_when_dropped(owner, provider, workers)
        >>> del owner  # the worker stops here
        >>> workers[0].alive()
        False
    """
    if _note_collection not in gc.callbacks:
        gc.callbacks.append(_note_collection)
    return weakref.finalize(owner, _stop_all_quietly, provider, workers, os.getpid())


#: The thread running a garbage collection now, None between collections (``gc.callbacks``).
_collecting: int | None = None


def _note_collection(phase: str, info: dict[str, int]) -> None:
    global _collecting
    _collecting = threading.get_ident() if phase == "start" else None


def _stop_all_quietly(provider: Provider, workers: list[Worker], owner_pid: int) -> None:
    if os.getpid() != owner_pid:
        # A fork of the owner (ending, or closing its copy of the env) leaves the owner's
        # workers alone: they serve the owner, which still uses them.
        return
    # Runs from the garbage collector or at exit, where an exception would only be printed.
    try:
        provider.stop_all(workers)
    except Exception as exc:
        warnings.warn(f"could not stop {len(workers)} {provider.name} worker(s): {exc}; they end "
                      "when this process exits", RuntimeWarning, stacklevel=2)


#: Workers of this process that still run; those left at its exit are stopped then.
_live: "weakref.WeakSet[Worker]" = weakref.WeakSet()
_exit_hook: list[bool] = []


def track(worker: Worker) -> None:
    """Stop ``worker`` at this process's exit if it still runs then (:func:`untrack` once it
    stopped). Workers also watch their owner, so this only spares them the wait."""
    if not _exit_hook:
        _exit_hook.append(True)
        # Registered on first use, after the providers' own modules (the fork servers): hooks
        # run last-registered first, so workers stop while their fork server still reports
        # how they ended.
        atexit.register(_stop_leftovers)
    _live.add(worker)


def untrack(worker: Worker) -> None:
    """Forget a worker that stopped."""
    _live.discard(worker)


def _stop_leftovers() -> None:
    for worker in list(_live):
        try:
            worker.stop()
        except Exception:  # the engine may be gone at exit; the watchdogs still reap
            pass


# A fork of this process inherits the set, but not the workers: they are this process's.
os.register_at_fork(after_in_child=_live.clear)


@contextlib.contextmanager
def naming_fd_limit(what: str) -> Iterator[None]:
    """Turn running out of file descriptors into an error that names the limit and the fix.

    Each worker holds a few descriptors in the trainer (its socket, a process handle, a
    shared-memory buffer), so a large pool can reach a low ``ulimit -n``, where the bare
    ``OSError: [Errno 24] Too many open files`` says neither.

    Raises:
        ProviderUnavailableError: The body ran out of descriptors (EMFILE, ENFILE).

    Example:
        >>> import errno
        >>> with naming_fd_limit("starting 64 workers"):  # doctest: +ELLIPSIS
        ...     raise OSError(errno.EMFILE, "Too many open files")
        Traceback (most recent call last):
        openenv_gym.errors.ProviderUnavailableError: out of file descriptors starting 64 workers: ...
    """
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        raise ProviderUnavailableError(
            f"out of file descriptors {what}: this process may open {soft} (ulimit -n) and each "
            "worker takes a few (its socket, process handle, shared memory); raise the limit "
            "(`ulimit -n 4096`, or resource.setrlimit(resource.RLIMIT_NOFILE, ...)) or start "
            f"fewer workers ({exc})") from exc


def wait_ready(address: str, timeout: float, still_starting: Callable[[], bool],
               describe: Callable[[], str]) -> None:
    """Poll ``address`` until a worker accepts connections (no fixed sleeps).

    Args:
        address: The binary address to probe.
        timeout: Seconds to wait in all.
        still_starting: False once the worker has died (stop waiting at once).
        describe: What to add to the error (log tail).

    Raises:
        OpenEnvError: The worker exited during startup (see :func:`startup_error`).
        WorkerError: The worker did not become ready in time.
    """
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        try:
            connect(address, timeout=1.0).close()
            return
        except WorkerConnectionError:
            pass
        if not still_starting():
            raise startup_error("worker exited during startup", describe())
        if time.monotonic() > deadline:
            # Still alive: most often an env that takes long to make (a large data file).
            raise WorkerError(f"worker not ready after {timeout:.0f} s at {address}; if its env takes "
                              f"longer to start (a large data file), give it more time: "
                              f"provider_options={{'startup_timeout': {max(2 * timeout, 120):.0f}}}.\n"
                              f"{describe()}")
        time.sleep(delay)
        # Capped low: a forked worker is ready ~20-40 ms in, and a coarser poll added up to
        # half its own step to every cold start; a refused connect costs microseconds.
        delay = min(delay * 1.5, 0.01)


def startup_error(what: str, log: str) -> OpenEnvError:
    """The error to raise for a worker that exited during startup.

    Args:
        what: What happened, for a worker whose log names no error.
        log: The worker's last log lines.

    Returns:
        The error that stopped the env from being made, as the worker's log names it
        (:mod:`openenv_gym.protocol.startup`) and with the type the worker gave it; an
        :class:`~openenv_gym.errors.EnvServerError` also carries the log (its traceback).
        A :class:`~openenv_gym.errors.WorkerError` with ``what`` and the log otherwise.
    """
    error = failure_in(log)
    if error is None:
        return WorkerError(f"{what}.\n{log}")
    if isinstance(error, EnvServerError):  # an exception of the env's own: where it came from
        error.args = (f"{error}\n{log}",)  # in place: its fields (unknown_arguments) stay
    return error


class ServerProcess(Protocol):
    """What :func:`terminate` needs of a process: a ``subprocess.Popen``, or a worker the fork
    server started (``_forks.ForkedProcess``), whose ``wait`` raises ``TimeoutExpired`` too."""

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


def terminate(proc: ServerProcess, grace: float = 2.0) -> None:
    """Stop a server process: SIGTERM (it closes its sessions), SIGKILL after ``grace`` seconds.

    Args:
        proc: The process (spawned or forked); nothing happens when it already exited.
        grace: Seconds to wait for a clean exit.
    """
    if proc.poll() is not None:
        return
    try:
        proc.terminate()
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5.0)
    except BaseException:
        # Interrupted (Ctrl-C, often pressed because a stuck worker makes close() wait):
        # the SIGKILL due after the grace must not be skipped, or a worker that ignores
        # SIGTERM runs on with no one left to stop it (close() has run its finalizer).
        proc.kill()
        raise


def env_kwargs_json(env_kwargs: dict[str, Any]) -> str:
    """Env keyword arguments as the JSON a worker's command line carries (``--env-kwargs``).

    Raises:
        TypeError: A value is not JSON-serializable (it could not reach the worker), or a
            mapping among them has a key that is not text (JSON would turn ``1`` into ``"1"``,
            and the env would look its key up in vain).
        InvalidRequestError: The JSON is longer than one argument of a command line may be.
    """
    where = _key_not_text(env_kwargs, "env_kwargs")
    if where is not None:
        raise TypeError(f"env kwargs reach a worker as JSON, whose keys are text: {where} would "
                        "arrive as a str; key that mapping by str (and look it up so in the env), "
                        "or pass it as a list of (key, value) pairs")
    try:
        text = json.dumps(_tuples_marked(env_kwargs), default=_plain)
    except TypeError as exc:
        raise TypeError(f"env kwargs must be JSON-serializable to reach a worker: {exc}") from None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size >= _MAX_ARGUMENT:
        # Started, the worker failed as exec's bare OSError "Argument list too long: '.../python'".
        raise InvalidRequestError(
            f"env kwargs are {size} bytes as JSON, more than a worker's command line carries "
            f"({_MAX_ARGUMENT - 1} bytes, Linux's limit on one argument); give a large value as a "
            "file the env reads (FinRL's data_path=, Git's tasks_file=, a path of your own env's)")
    return text


#: Linux's MAX_ARG_STRLEN: the longest one argument of exec may be, its final NUL included.
_MAX_ARGUMENT = 32 * 4096


def _tuples_marked(value: Any) -> Any:
    """``value`` with each tuple in it as ``{TUPLE_KEY: [...]}``, which the worker reads back as
    the tuple (:func:`~openenv_gym.protocol.startup.env_kwargs_from_json`): JSON made it a list."""
    if isinstance(value, tuple):
        return {TUPLE_KEY: [_tuples_marked(item) for item in value]}
    if isinstance(value, list):
        return [_tuples_marked(item) for item in value]
    if isinstance(value, dict):
        return {key: _tuples_marked(item) for key, item in value.items()}
    return value


def _key_not_text(value: Any, path: str) -> str | None:
    """Where ``value`` holds a mapping key that is not a str (``"the key 1 of x['m']"``), or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"the key {key!r} of {path}"
            if (where := _key_not_text(item, f"{path}[{key!r}]")) is not None:
                return where
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            if (where := _key_not_text(item, f"{path}[{index}]")) is not None:
                return where
    return None


def _plain(value: Any) -> Any:
    """A numpy scalar or array as the Python number or list it holds (``np.int64(5)`` is
    what ``rng.integers`` and array indexing give; a Gymnasium user passes them as ints),
    a path (``pathlib.Path``) as its text and a date or datetime (``pandas.Timestamp``
    too) as ISO text: the forms a local env takes them in as well."""
    import datetime

    import numpy as np

    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, datetime.date):  # datetime and pandas.Timestamp are dates too
        return value.isoformat()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
