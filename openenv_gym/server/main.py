"""The worker process: builds an env service and serves it on the binary and HTTP fronts.

Run as ``python -m openenv_gym.server ENV [options]`` (providers do this) or through
``openenv-gym serve ENV``. Binds only to Unix sockets or loopback unless told otherwise
(inside a container's own network namespace).
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Callable, NoReturn

from gymnasium import error as gym_error

from openenv_gym._signature import did_you_mean, keyword_names, takes_any_keyword
from openenv_gym._stdout import stdout_to_devnull
from openenv_gym._stop_flag import StopFlag
from openenv_gym.catalog import EnvInfo, get_env_info, load_env_class
from openenv_gym.envs.base import Environment
from openenv_gym.errors import (
    InvalidRequestError,
    OpenEnvError,
    ProviderUnavailableError,
    UnknownEnvironmentError,
    env_error,
)
from openenv_gym.protocol.startup import env_kwargs_from_json, failure_line, ready_line
from openenv_gym.providers._docker_owner import stat_fields
from openenv_gym.server._pids import process_budget
from openenv_gym.server.binary import BinaryServer
from openenv_gym.server.service import EnvService
from openenv_gym.server.sessions import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS

__all__ = ["build_service", "run_server", "main"]


def build_service(env: str, env_kwargs: dict[str, Any] | None = None,
                  max_sessions: int = DEFAULT_MAX_SESSIONS,
                  idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT) -> EnvService:
    """Build the service for a catalog env.

    Args:
        env: Catalog name or Gymnasium id.
        env_kwargs: Keyword arguments for the env's constructor.
        max_sessions: Most sessions at once.
        idle_timeout: Seconds before an idle session is closed.

    Returns:
        The service, with one env built (its spaces answer ``/spec``).

    Raises:
        InvalidRequestError: The env takes no such argument (its ``unknown_arguments`` name
            those it does not take), lacks a required one, or rejected a value (a
            ``ValueError`` or Gymnasium ``Error`` of its constructor).
        UnknownEnvironmentError: Gym-v0's ``env_id`` is not registered.
        ProviderUnavailableError: Gym-v0's env needs a package the worker lacks, or the env
            runs a program (``EnvInfo.programs``) the worker's PATH lacks.
        OpenEnvError: Any typed error the env raised (``InvalidDataError``, ...), its
            type kept.
        EnvServerError: Anything else the env raised (also an instance of its built-in
            exception class: see :func:`~openenv_gym.errors.env_error`).
    """
    info = get_env_info(env)
    try:
        cls = load_env_class(info)
    except ModuleNotFoundError as exc:  # a package the env's module imports is missing
        raise _missing_package(info, f"cannot load env {info.name!r}", exc) from exc
    if not (isinstance(cls, type) and issubclass(cls, Environment)):
        raise InvalidRequestError(
            f"env {info.name!r}: its entry point {info.entry_point!r} names {cls!r}, not a subclass "
            "of openenv_gym.envs.base.Environment; derive the env class from it (a plain "
            "gymnasium.Env can be served with OpenEnv/Gym-v0 and env_id=...)")
    kwargs = dict(env_kwargs or {})
    what = f"cannot make env {info.name!r}" + (f" with {kwargs}" if kwargs else "")
    missing = [program for program in info.programs if shutil.which(program) is None]
    if missing:  # every reset would fail on it (git: exit 127), with no word of the cause
        raise ProviderUnavailableError(
            f"{what}: {', '.join(missing)} is not on the worker's PATH: install it there "
            f"(apt-get install {' '.join(missing)}), or use provider='docker' (its image has it)")
    try:
        signature: inspect.Signature | None = inspect.signature(cls)
    except (TypeError, ValueError):  # a class without one (an extension type): its call says
        signature = None
    if signature is not None:
        try:
            signature.bind(**kwargs)
        except TypeError as exc:
            accepted = keyword_names(signature.parameters.values())
            # Named apart from bind's wording (which names the first only), for the client to
            # act on without parsing it: gym.make's step_timeout= is make_vec's timeout=.
            unknown = ([] if takes_any_keyword(signature.parameters.values())
                       else [name for name in kwargs if name not in accepted])
            guess = did_you_mean(unknown, accepted)
            raise InvalidRequestError(f"{what}: {exc}; it takes {', '.join(accepted) or 'no arguments'}"
                                      + (f" (did you mean {guess}?)" if guess else ""),
                                      unknown_arguments=unknown) from None
    try:
        return EnvService(lambda: cls(**kwargs), env_name=info.name, max_sessions=max_sessions,
                          idle_timeout=idle_timeout)
    except OpenEnvError as exc:
        exc.args = (f"{what}: {exc}",)  # in place: its type and fields (unknown_arguments) stay
        raise
    except gym_error.UnregisteredEnv as exc:  # Gym-v0's env_id
        raise UnknownEnvironmentError(f"{what}: {exc}") from exc
    except gym_error.DependencyNotInstalled as exc:  # Gym-v0's env needs a package the worker lacks
        raise ProviderUnavailableError(f"{what}: {exc} (in the worker's Python; for the docker "
                                       "provider, in its image)") from exc
    except ModuleNotFoundError as exc:  # the env's extra is not installed in the worker
        raise _missing_package(info, what, exc) from exc
    except (ValueError, gym_error.Error) as exc:  # how constructors (and ale-py) reject arguments
        raise InvalidRequestError(f"{what}: {exc}") from exc
    except Exception as exc:
        raise env_error(exc, what) from exc


def _missing_package(info: EnvInfo, what: str, exc: ModuleNotFoundError) -> ProviderUnavailableError:
    """The error for an env whose code imports a package the worker's Python lacks: it names
    the extra that installs it (``pip install 'openenv-gym[atari]'``), as ``doctor`` does."""
    if info.extra:
        fix = f"pip install 'openenv-gym[{info.extra}]'"
    elif exc.name:
        fix = f"install the package that provides {exc.name!r}"
    else:  # Gymnasium re-raises a failed "module:Env" import without the module's name
        fix = "make that module importable: install it, or put its folder on PYTHONPATH"
    return ProviderUnavailableError(f"{what}: {exc}; {fix} (in the worker's Python; for the "
                                    "docker provider, in its image)")


def _owner_alive(owner_pid: int, parent_at_start: int) -> bool:
    if owner_pid == parent_at_start and os.getppid() != parent_at_start:
        return False  # we were re-parented: the owner died (even if it lingers as a zombie)
    try:
        os.kill(owner_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, just not ours to signal
    try:
        return stat_fields(owner_pid)[:1] != [b"Z"]
    except OSError:
        return True  # no /proc: trust kill(0)


def _watch_owner(owner_pid: int, on_gone: Any) -> None:
    # Polling survives an owner killed with SIGKILL, which no handler of the owner sees.
    parent_at_start = os.getppid()
    while _owner_alive(owner_pid, parent_at_start):
        time.sleep(0.2)
    on_gone()


def _end_steps(reap: bool = False) -> None:
    """SIGKILL the children of steps in flight, so that a stopping server neither waits for
    them (their timeout) nor leaves them behind: Coding and Git run them in sessions of their
    own, which outlive the server. Their steps return what the children wrote so far.
    ``reap``: also end the orphans adopted (once no step runs any more: at shutdown)."""
    exec_mod = sys.modules.get("openenv_gym.envs._exec")  # loaded only by envs that use it
    if exec_mod is not None:
        exec_mod.kill_all()
        if reap:
            exec_mod.reap_orphans()


def _isolate_self(env: str) -> Callable[[], None]:
    """Put this process, as root and for an untrusted env, into a cgroup and a private tmpfs
    of its own (see :mod:`openenv_gym.providers._cgroup`, :mod:`openenv_gym.providers._tmpfs`).

    Returns:
        What undoes it at shutdown (after the children are ended).
    """
    from openenv_gym.providers import _cgroup, _tmpfs
    from openenv_gym.providers._runtime import make_owned_folder, remove_folder, runtime_dir

    name = get_env_info(env).name
    spec = _tmpfs.spec_for_env(name)
    tmp = None
    if spec:
        # Named like a pool folder, so a server killed before cleaning up is swept later.
        tmp = os.path.join(runtime_dir(), f"{os.getpid()}-serve")
        make_owned_folder(tmp)
        _tmpfs.mount_private_tmp(tmp, spec)
    group = _cgroup.for_env(name, "serve")
    if group is not None:
        group.add(os.getpid())

    def release() -> None:
        if group is not None:
            _cgroup.leave()
        if tmp is not None:
            _tmpfs.unmount_private_tmp(tmp)
            remove_folder(tmp)  # and the owner file the mount covered

    return release


#: prctl option: whether the process may be ptraced, or its /proc files opened, by its uid.
_PR_SET_DUMPABLE = 4


def _not_traceable(env: str) -> None:
    """Keep an untrusted env's code from taking over this server: a child of the same uid
    (a Coding/Git step with ``confine=False``, or where Landlock is missing; in a container
    every process has the one uid) could ``ptrace`` it or write ``/proc/<pid>/mem``, then
    forge rewards and replies to the trainer. Non-dumpable, the server is out of reach of
    any process without CAP_SYS_PTRACE; its children start dumpable again (``execve``)."""
    try:
        untrusted = get_env_info(env).untrusted
    except Exception:  # noqa: BLE001 - a Gymnasium id, not in the catalog: build_service says
        return
    if untrusted and sys.platform.startswith("linux"):
        from openenv_gym.envs._subreaper import prctl

        prctl(_PR_SET_DUMPABLE, 0)


def run_server(env: str, *, unix: str | None = None, tcp_port: int | None = None,
               http_port: int | None = None, host: str = "127.0.0.1",
               env_kwargs: dict[str, Any] | None = None, owner_pid: int | None = None,
               owner_dir: str | None = None, max_sessions: int = DEFAULT_MAX_SESSIONS,
               idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT, isolate: bool = False) -> None:
    """Serve an env until SIGTERM/SIGINT or until the owner process is gone.

    Args:
        env: Catalog name or Gymnasium id.
        unix: Path of the binary Unix socket.
        tcp_port: Port of the binary TCP socket on ``host`` (0: any free port).
        http_port: Port of the HTTP/JSON server on ``host`` (0: any free port).
        host: Interface to bind TCP servers to (127.0.0.1 unless inside a container).
        env_kwargs: Keyword arguments for the env.
        owner_pid: Exit when this process is gone.
        owner_dir: A folder of the owner's (sockets, logs) to remove when the owner is gone,
            since no one is left to clean it up.
        max_sessions: Most sessions at once.
        idle_timeout: Seconds before an idle session is closed.
        isolate: Give this very process what the process provider gives an untrusted env's
            worker, where the machine allows it: a cgroup with Docker's limits and a private
            tmpfs (``openenv-gym serve``, which no provider starts).
    """
    done = StopFlag()  # set in signal handlers (an Event there could hang the server for good)
    stop = done.set

    # Both ways of serving end through shutdown() below. uvicorn, while it runs, puts its own
    # handlers in place, then restores these and re-raises the signal that stopped it: with
    # the default handlers that killed the process before shutdown() (steps in flight, the
    # cgroup and tmpfs of `serve` were left behind). In place before the sockets are: an
    # owner may stop a worker as soon as it answers.
    if threading.current_thread() is threading.main_thread():  # signals reach that one only
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
    release = _isolate_self(env) if isolate else None
    _not_traceable(env)
    try:
        service = build_service(env, env_kwargs, max_sessions, idle_timeout)
    except BaseException:
        if release is not None:
            release()
        raise
    owner_gone = threading.Event()

    def on_owner_gone() -> None:
        owner_gone.set()
        stop()

    if owner_pid:
        # Before any server listens: a worker that cannot start this thread (its pids_limit
        # used up) must fail its startup, not after a provider took it for ready.
        threading.Thread(target=_watch_owner, args=(owner_pid, on_owner_gone), daemon=True).start()
    servers: list[BinaryServer] = []
    if unix:
        servers.append(BinaryServer(service, f"unix://{unix}"))
    if tcp_port is not None:
        servers.append(BinaryServer(service, f"tcp://{host}:{tcp_port}"))
    service.binary_address = servers[0].address if servers else None
    # What providers read to learn the worker is up, and where (ray: the socket, then TCP).
    also = [server.address for server in servers[1:]]
    if get_env_info(service.env_name).untrusted:
        # Daemons that steps leave behind are re-parented here and killed after each step.
        from openenv_gym.envs import _exec

        _exec.adopt_orphans()

    def shutdown() -> None:
        for server in servers:
            server.close()
        _end_steps(reap=True)
        service.shutdown()
        if release is not None:
            release()
        if owner_gone.is_set():
            # Nobody else will clean up: the owner removed these when it stopped the worker.
            if owner_dir:
                shutil.rmtree(owner_dir, ignore_errors=True)
            from openenv_gym.providers import _cgroup

            _cgroup.leave()

    if http_port is None:
        print(ready_line(service.env_name, service.binary_address, also), flush=True)
        # Waking now and then is what lets a SIGTERM that the kernel handed to another thread
        # run its handler: Python runs handlers on this thread, and a wait without a timeout
        # is not interrupted by a signal taken elsewhere.
        while not done.wait(0.5):
            pass
        shutdown()
        return

    import uvicorn  # the web stack loads only in workers that serve HTTP

    from openenv_gym.server.http import create_app

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:  # uvicorn's handler while it runs
            # uvicorn first: it takes a SIGINT that finds should_exit set (which stop() has
            # stop_serving set) for a second Ctrl-C, and quits with tracebacks.
            super().handle_exit(sig, frame)
            stop()

    streams_end = threading.Event()
    config = uvicorn.Config(create_app(service, stopping=streams_end), host=host, port=http_port,
                            log_level="warning", access_log=False)
    server = Server(config)
    stopped = threading.Event()

    def stop_serving() -> None:
        done.wait()
        streams_end.set()  # as `start --web` does: an open /web page must not hold the exit
        server.should_exit = True
        # uvicorn lets the requests in flight finish: a step would run on to its timeout (up
        # to max_timeout) before the server exits, with nothing said. End their children
        # until it has, also those of a request that came in meanwhile.
        while True:
            _end_steps()
            if stopped.wait(0.1):
                return

    threading.Thread(target=stop_serving, daemon=True).start()

    def announce() -> None:
        while not server.started and not done.is_set():
            time.sleep(0.01)
        if not server.started:  # told to stop first (Ctrl-C while the env was being made)
            return
        sockets = [s for srv in getattr(server, "servers", []) for s in srv.sockets]
        port = sockets[0].getsockname()[1] if sockets else http_port
        service.http_address = f"http://{host}:{port}"
        try:
            print(ready_line(service.env_name, service.binary_address, also, service.http_address), flush=True)
        except BrokenPipeError:
            # Nobody reads the output (`serve | true`): serve on, quietly, as after `| head -1`.
            stdout_to_devnull()

    threading.Thread(target=announce, daemon=True).start()
    try:
        server.run()
    finally:
        stopped.set()
        shutdown()


def main(argv: list[str] | None = None) -> None:
    """Command-line entry of a worker process."""
    parser = argparse.ArgumentParser(prog="python -m openenv_gym.server",
                                     description="Serve one openenv_gym environment.")
    parser.add_argument("env", help="catalog name or Gymnasium id, e.g. echo or OpenEnv/Echo-v0")
    parser.add_argument("--unix", help="path of the binary Unix socket")
    parser.add_argument("--tcp-port", type=int, help="binary TCP port (0: any free port)")
    parser.add_argument("--http-port", type=int, help="HTTP/JSON port (0: any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="interface for TCP (default 127.0.0.1)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object of env keyword arguments")
    parser.add_argument("--owner-pid", type=int, help="exit when this process is gone")
    parser.add_argument("--owner-dir", help="folder to remove when the owner is gone")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS)
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT,
                        help="seconds before an idle session closes (0: never)")
    parser.add_argument("--private-tmp", help="mount a private tmpfs on this folder and use it as TMPDIR")
    parser.add_argument("--private-tmp-options",
                        help="its Docker tmpfs options (default: the hardening defaults' /tmp)")
    parser.add_argument("--tmpdir", help="use this existing folder as TMPDIR (no tmpfs mounted)")
    args = parser.parse_args(argv)
    if not (args.unix or args.tcp_port is not None or args.http_port is not None):
        parser.error("give at least one of --unix, --tcp-port, --http-port")
    if args.tmpdir and not args.private_tmp:
        os.environ["TMPDIR"] = args.tmpdir
        tempfile.tempdir = args.tmpdir
    if args.private_tmp:
        # Before any server thread starts: those inherit this thread's mount namespace.
        from openenv_gym.providers._docker_hardening import HARDENING
        from openenv_gym.providers._tmpfs import mount_private_tmp

        mount_private_tmp(args.private_tmp, args.private_tmp_options or HARDENING["tmpfs"]["/tmp"])
    try:
        run_server(args.env, unix=args.unix, tcp_port=args.tcp_port, http_port=args.http_port,
                   host=args.host, env_kwargs=env_kwargs_from_json(args.env_kwargs), owner_pid=args.owner_pid,
                   owner_dir=args.owner_dir,
                   max_sessions=args.max_sessions, idle_timeout=args.idle_timeout or None)
    except OpenEnvError as exc:  # the env could not be made (build_service)
        _exit_failed(exc)
    except RuntimeError as exc:
        if str(exc) != "can't start new thread":
            raise
        # Many workers on one machine: the trainer's cgroup or the user's process limit is
        # used up, which the bare RuntimeError does not name.
        _exit_failed(ProviderUnavailableError(
            f"a worker could not start a thread ({exc}): the process budget is used up: "
            f"{process_budget()}; start fewer workers (envs_per_worker=... for a vector env, "
            "num_workers=... for an EnvPool) or raise the limit"))


def _exit_failed(exc: OpenEnvError) -> NoReturn:
    """End a worker that could not start, so that its provider raises ``exc`` in the trainer."""
    traceback.print_exc()
    sys.stderr.flush()
    # Last, so it is in any tail of the log: the provider raises it in the trainer.
    print(failure_line(exc), flush=True)
    raise SystemExit(1) from None


if __name__ == "__main__":
    main(sys.argv[1:])
