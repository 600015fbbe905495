"""This process's connection to Ray, shared by every :class:`~openenv_gym.providers.ray.RayProvider`
in it: connected (or a local Ray started) by the first, and shut down after the last only
if we started it and nothing else of the user's runs on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import re
import signal
import socket
import threading
import time
from typing import Any, Callable, Iterator

import ray

from openenv_gym.errors import InvalidRequestError, ProviderUnavailableError
from openenv_gym.providers._docker_owner import stat_fields
from openenv_gym.providers._ray_fork import forked_from_ray_user, mark_ray_used
from openenv_gym.providers._ray_host import ACTOR_NAME_PREFIX

__all__ = ["acquire_ray", "broken_ray", "cause", "refuse_in_fork", "release_ray", "ray_session"]

logger = logging.getLogger("openenv_gym.ray")


def cause(exc: BaseException) -> str:
    # RayTaskError wraps the actor's exception; show the user the original message.
    cause = getattr(exc, "cause", None)
    return str(cause) if cause is not None else str(exc).strip().splitlines()[-1]


_connection_lock = threading.Lock()
_connection_users = 0
#: The Ray connection this module made (:func:`ray_session`), None when the current one
#: is not ours (the user's own ``ray.init``) or there is none.
_our_session: tuple[str, str] | None = None
#: Whether :data:`_our_session` is a local Ray this module started (its shutdown ends all
#: work on it), rather than a cluster it joined (its shutdown only disconnects this process).
_we_started = False
_started_pid = 0  # the process that started it: a fork's Popen handles on it poll as exited
def refuse_in_fork() -> None:
    """Raise at once in a fork of a process that had used Ray, where Ray's calls hang.

    Raises:
        ProviderUnavailableError: This process is such a fork.
    """
    if forked_from_ray_user():
        raise ProviderUnavailableError(
            "this process was forked from one that had used Ray, and Ray cannot be used after a "
            "fork (its calls hang): make provider='ray' envs in a process started fresh, e.g. "
            "gym.make_vec(..., provider='ray') (its own vector env) rather than "
            "vectorization_mode='async', or vector_kwargs={'context': 'spawn'}; a DataLoader's "
            "workers with multiprocessing_context='spawn'")


def ray_session() -> tuple[str, str] | None:
    """Which Ray connection this process has now: its cluster (GCS address) and job, or None.

    ``ray.shutdown()`` then ``ray.init()`` (a notebook cell run again) gives another one, in
    which the actors of the first are unknown: Ray then raises a bare ``Exception`` ("it's
    from a different cluster") for any call to them.
    """
    if not ray.is_initialized():
        return None
    ctx = ray.get_runtime_context()
    return str(getattr(ctx, "gcs_address", "") or ""), str(ctx.get_job_id())


def broken_ray() -> str:
    """What of the local Ray this process started has died (its GCS or raylet: killed, out
    of memory), or "" while it runs, or when it is not one we started.

    Such a Ray cannot place actors any more (the raylet) or answer anything (the GCS: every
    call that needs it blocks, and Ray ends this process a minute later), so it is shut down
    rather than asked whether other work runs on it, and never reused for a new env.
    """
    # In a fork (a DataLoader worker), Ray's Popen.poll() of a raylet that is not this
    # process's child gets ECHILD and says it exited: never judge (or kill) it from there.
    if not (_we_started and os.getpid() == _started_pid and ray.is_initialized()
            and ray_session() == _our_session):
        return ""
    node = _local_node()
    try:
        dead = [name for name, _ in node.dead_processes()] if node is not None else []
    except Exception:  # noqa: BLE001 - Ray's private node handle changed: assume it runs
        return ""
    return " and ".join(sorted({n for n in dead if n in ("gcs_server", "raylet")}))


def _shutdown_broken(what: str) -> None:
    """Shut down a local Ray of ours whose ``what`` died (call under the connection lock)."""
    global _our_session, _connection_users
    logger.warning("openenv-gym: the local Ray it started lost its %s; shutting it down", what)
    # ray.shutdown() stops the processes it started itself; the agents a raylet started
    # (dashboard and runtime-env agents) outlive a raylet killed after its GCS: end them too.
    orphans = _children(_pids_of("raylet"))
    with contextlib.suppress(Exception):
        ray.shutdown()
    for pid in orphans:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _our_session, _connection_users = None, 0


def _local_node() -> Any:
    """Ray's handle on the processes of a local Ray this process started (private to Ray:
    its callers treat any failure as "unknown"), or None."""
    return getattr(getattr(ray, "_private").worker, "_global_node", None)


def _pids_of(kind: str) -> list[int]:
    node = _local_node()
    try:
        return [info.process.pid for info in node.all_processes.get(kind, [])] if node else []
    except Exception:  # noqa: BLE001 - Ray's private node handle changed
        return []


def _children(parents: list[int]) -> list[int]:
    """The live child processes of ``parents`` (from /proc; none where there is no /proc)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    fields = stat_fields(entry)
                    if int(fields[1]) in parents and fields[0] not in (b"Z", b"X"):
                        found.append(int(entry))
    return found


def acquire_ray(address: str | None, init_kwargs: dict[str, Any]) -> tuple[str, str] | None:
    """Connect to (or start) Ray once per process.

    Returns:
        The session this call counted a user of (give it to :func:`release_ray`), or None
        when Ray runs by the user's own ``ray.init`` (never shut down for them).

    Raises:
        ProviderUnavailableError: Nothing answers at ``address``, or this process is a fork
            of one that had used Ray, where Ray's calls hang (:func:`refuse_in_fork`).
    """
    global _connection_users, _our_session, _we_started, _started_pid
    refuse_in_fork()
    with _connection_lock:
        what = broken_ray()
        if what:
            # Its users' workers went with it (their next call says so); start a fresh one.
            _shutdown_broken(what)
        if not ray.is_initialized():
            loopback_only = _check_reachable(address)
            kwargs = {"include_dashboard": False, "log_to_driver": False, **init_kwargs}
            try:
                local = _starts_local_ray(address)
                with _interrupts_held(local) as interrupted, _on_loopback(local or loopback_only):
                    _on_a_lasting_thread(lambda: ray.init(address=address, **kwargs))
                if interrupted:
                    raise KeyboardInterrupt
            except BaseException as exc:
                # A start cut short (Ctrl-C, a failed connect) leaves Ray half made: its GCS
                # and raylet run on, or a core worker makes the next ray.init abort the whole
                # process. Nothing of it is the user's (Ray was not initialized): undo it.
                with contextlib.suppress(Exception):
                    ray.shutdown()
                if isinstance(exc, ValueError) and str(exc).startswith("Invalid address"):
                    # Ray's own words ("Invalid address format: nonsense") named no option.
                    raise InvalidRequestError(
                        f"provider_options['address']={address!r} is no address Ray can join "
                        f"({exc}); give 'HOST:PORT', 'ray://HOST:PORT', 'auto', 'local' or None "
                        "(Ray's default)") from None
                if not isinstance(exc, ConnectionError):
                    raise
                # address="auto" with no cluster running; or one that answers but refuses
                # this process (its token): Ray's message then only says "Failed to connect",
                # and why is in what it chained (e.g. an AuthenticationError saying how to
                # give this process the cluster's token).
                why = f"{exc} ({cause(exc.__cause__)})" if exc.__cause__ is not None else str(exc)
                raise ProviderUnavailableError(
                    f"cannot connect to the Ray cluster at {address!r}: {why}; start it if it "
                    "does not run (`ray start --head`), or pass address=None to start a local "
                    "one") from None
            # The users of a Ray of ours that the user shut down went with it.
            _our_session, _connection_users, _we_started = ray_session(), 0, local
            _started_pid = os.getpid()
        mark_ray_used()
        if _our_session is None or ray_session() != _our_session:
            return None  # the user's own ray.init: never shut it down for them
        _connection_users += 1
        return _our_session


@contextlib.contextmanager
def _interrupts_held(local: bool) -> Iterator[list[int]]:
    """While a local Ray starts (``local``; seconds), hold Ctrl-C (SIGINT under Python's default
    handler, on the main thread) until the block ends; the list it yields is non-empty if one
    came. Joining a cluster stays interruptible, and a handler of the user's own stands.

    ``ray.init`` is not safe to interrupt: cut short, it leaves its GCS, raylet and agents
    running with nothing that knows them, or a core worker that makes the next ``ray.init``
    abort the whole process. Held, the interrupt lands once Ray is up, and the caller shuts
    that Ray down cleanly.
    """
    came: list[int] = []
    if (not local or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield came
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield came
    finally:
        signal.signal(signal.SIGINT, previous)


def _on_a_lasting_thread(start: Callable[[], Any]) -> Any:
    """Run ``start`` (``ray.init``) on a thread that lives as long as this process.

    The local Ray that ``ray.init`` starts (its GCS and raylet) is killed by the kernel when
    the *thread* that started it ends: Ray arms ``PR_SET_PDEATHSIG``, which is scoped to the
    creating thread. An env made first from a short-lived thread (a thread pool making envs,
    a web handler) lost its Ray when that thread returned, and Ray then ended the whole
    process a minute later. The main thread lasts; any other hands the start to one that does:
    a daemon thread of our own, never joined. (A ``ThreadPoolExecutor``'s thread is joined at
    exit before the ``atexit`` handlers run: Ray died first, and the finalizers of envs left
    open then waited a minute for its GCS and ended the process with an error.)
    """
    if threading.current_thread() is threading.main_thread():
        return start()
    done = threading.Event()
    outcome: list[tuple[bool, Any]] = []

    def job() -> None:
        try:
            outcome.append((True, start()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            outcome.append((False, exc))
        finally:
            done.set()

    global _lasting
    with _lasting_lock:
        if _lasting is None:
            _lasting = queue.SimpleQueue()
            threading.Thread(target=_serve_lasting, args=(_lasting,), name="openenv-gym-ray",
                             daemon=True).start()
        _lasting.put(job)
    done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _serve_lasting(jobs: "queue.SimpleQueue[Callable[[], None]]") -> None:
    while True:
        jobs.get()()


_lasting_lock = threading.Lock()
_lasting: "queue.SimpleQueue[Callable[[], None]] | None" = None


#: Ray's switch between a one-machine Ray on 127.0.0.1 and one that can take other nodes.
_CLUSTER_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _starts_local_ray(address: str | None) -> bool:
    """Whether ``ray.init(address=address)`` starts a Ray of its own rather than joining one."""
    if address not in (None, "local"):
        return False
    from ray._private import services

    try:
        return services.canonicalize_bootstrap_address(address) is None
    except Exception:  # noqa: BLE001 - Ray's own lookup decides then
        return False


@contextlib.contextmanager
def _on_loopback(local: bool) -> Iterator[None]:
    """A Ray this process starts listens on 127.0.0.1 only, as every server of this package
    does: on Linux Ray binds its GCS, raylet and workers to all interfaces, unauthenticated.
    Its processes inherit the variable (they are started here); ``os.environ`` and Ray's
    constant are restored after, so a later ``ray start --address`` from this process or its
    children still joins a real cluster. Joining a cluster that listens on loopback only
    (``local`` then too, see :func:`_check_reachable`) takes the same switch: this process's
    Ray then dials 127.0.0.1 rather than this machine's own IP."""
    if not local or _CLUSTER_VAR in os.environ:  # the user's own choice stands
        yield
        return
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER
    os.environ[_CLUSTER_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        os.environ.pop(_CLUSTER_VAR, None)
        ray_constants.ENABLE_RAY_CLUSTER = before


def _check_reachable(address: str | None, timeout: float = 3.0) -> bool:
    """Refuse at once a ``host:port`` (or ``ray://host:port``) nothing listens on, given or
    (for None and ``"auto"``) in ``RAY_ADDRESS``: Ray itself retries such an address for
    minutes before it gives up.

    Returns:
        Whether ``address`` is a loopback one (``127.0.0.1:PORT``) of a cluster that listens
        on loopback only (as a Ray this package starts does, or one started with
        ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``): Ray dials this machine's own IP for a
        loopback address, where nothing answers, and then retried for many minutes, ignoring
        SIGTERM; :func:`_on_loopback` keeps it on loopback instead.
    """
    given = address
    if address in (None, "auto"):
        # Ray's default then is RAY_ADDRESS when set (a shell's leftover, a job's): one that
        # nothing answers at made ray.init retry for minutes too.
        address = os.environ.get("RAY_ADDRESS") or address
    match = re.fullmatch(r"(?:ray://)?\[?([\w.:-]+?)\]?:(\d+)", address or "")
    if match is None:
        return False  # None, "auto", "local": Ray's own lookups answer at once
    host, port = match[1], int(match[2])
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        source, local = ((" (RAY_ADDRESS)", "unset RAY_ADDRESS or pass address='local'")
                         if address != given else ("", "pass address=None"))
        raise ProviderUnavailableError(
            f"no Ray cluster answers at {address!r}{source}: {exc}; start one there (`ray start "
            f"--head`), or {local} to start a local one") from None
    from ray._private import services

    # Ray Client (ray://) connects to the address as given; so does a Ray already told to
    # stay on loopback, whose node IP is 127.0.0.1.
    if address.startswith("ray://") or not services.is_localhost(host):
        return False
    try:
        node_ip = services.get_node_ip_address()  # what Ray dials instead (127.0.0.1 if told so)
    except Exception:  # noqa: BLE001 - Ray's private lookup changed: let Ray dial as it does
        return False
    try:
        socket.create_connection((node_ip, port), timeout=timeout).close()
    except OSError:
        return True
    return False


def _others_use_ray(wait: float = 2.0) -> bool:
    """Whether something besides our workers runs on the cluster (an RLlib algorithm built on
    the Ray we started, a user's actor or task). Ray reports freed resources a little late,
    so a busy answer is re-checked for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        # On a cluster we only joined, other drivers' work holds resources too: disconnecting
        # ends only this process's job, whose actors and tasks the checks below see.
        busy = (_we_started and _resources_held()) or _tasks_running()
        if not busy or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    # Work that holds no resources (an actor with num_cpus=0, as Ray's own Queue, RLlib's
    # and Tune's coordinators are) leaves the counts untouched: ask the GCS for it.
    return busy or _other_actors_live()


def _resources_held() -> bool:
    """Whether some of the cluster's resources (not memory, not node markers) are in use."""
    total, free = ray.cluster_resources(), ray.available_resources()
    return any(free.get(k, 0.0) < v - 1e-6 for k, v in total.items()
               if not k.startswith("node:") and "memory" not in k)


def _tasks_running() -> bool:
    """Whether a job's driver still waits on a task (running or queued) on the Ray we started
    (on a cluster we only joined: this process's job, whose tasks disconnecting ends).

    A task that holds no resources (``num_cpus=0``) leaves the counts untouched. The GCS's
    job table says per job whether its driver has tasks pending (the GCS asks each driver:
    one call, about a millisecond, no dashboard needed); a task started by a task keeps its
    parent pending. Ours are all done by the last close. A Ray Client connection, or a Ray
    without this private table: False, the other checks answer then."""
    from ray._private import state
    from ray.core.generated import gcs_pb2

    try:
        job = ray.get_runtime_context().get_job_id()
        rows = state.state._connect_and_get_accessor().get_job_table(
            skip_submission_job_info_field=True, skip_is_running_tasks_field=False)
        jobs = [gcs_pb2.JobTableData.FromString(row) for row in rows]
    except Exception:  # noqa: BLE001 - Ray Client, or a Ray without these (private) tables
        return False
    return any(j.is_running_tasks and not j.is_dead and (_we_started or j.job_id.hex() == job)
               for j in jobs)


def _other_actors_live() -> bool:
    """Whether an actor not ours is alive on the Ray we started (on a cluster we only joined:
    an actor of this process's job, which disconnecting ends). Asks the GCS directly, one call
    (under a millisecond): Ray's public state API needs the dashboard, which a Ray we start
    runs without. A Ray Client connection has no GCS access here: the resource check alone
    answers then."""
    from ray._private import state

    try:
        job = ray.get_runtime_context().get_job_id()
        actors = state.actors().values()
    except Exception:  # noqa: BLE001 - Ray Client, or a Ray without these (private) tables
        return False
    # A killed worker's actor may read ALIVE for a moment: ours are told by their name (the
    # table reports no module, so a user's class named ServerHost would pass for ours).
    others = [a for a in actors if a.get("State") != "DEAD"
              and not str(a.get("Name") or "").startswith(ACTOR_NAME_PREFIX)
              and (_we_started or (a.get("JobID") == job and not a.get("IsDetached")))]
    return bool(others)


def release_ray(session: tuple[str, str] | None) -> None:
    """Count off a user of ``session`` (what :func:`acquire_ray` returned); shut Ray down
    after the last, unless it is no longer the one we connected."""
    global _connection_users, _our_session
    with _connection_lock:
        if session is None or session != _our_session:
            return  # not ours, or a Ray of ours the user shut down (and maybe made anew)
        _connection_users -= 1
        if _connection_users == 0:
            if ray_session() != _our_session:  # the user shut it down already
                _our_session = None
                return
            what = broken_ray()
            if what:  # nothing runs on it any more, and asking its GCS may block
                _shutdown_broken(what)
                return
            if _others_use_ray():
                # Shutting down would kill that work; Ray ends with this process instead.
                logger.warning("openenv-gym: leaving running the Ray it started: other work "
                               "still runs on it; ray.shutdown() ends it")
                return
            # Terminates a local Ray we started; only disconnects from a running cluster.
            ray.shutdown()
            _our_session = None
