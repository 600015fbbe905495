"""``openenv-gym start ENV -n N``: a long-running pool of workers, optionally with one web page.

The command starts the workers through a provider, prints their addresses, records the pool
(:mod:`openenv_gym.cli.pools`) so ``ps``/``stop``/``logs`` find it, replaces workers that die,
and stops everything on Ctrl-C or SIGTERM (what ``openenv-gym stop NAME`` sends). With
``--web`` it also serves the live view of every worker's sessions on one page.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import threading
from typing import Any, Callable, Sequence

from rich.markup import escape

from openenv_gym._stop_flag import StopFlag
from openenv_gym.cli import pools
from openenv_gym.cli._args import (
    add_env_kwargs,
    exit_codes,
    non_negative_float,
    pool_name,
    port,
    positive_int,
)
from openenv_gym.cli._ui import (
    ENV_ARGUMENT_ERRORS,
    OK,
    USAGE,
    bind_problem,
    console,
    env_arguments_refused,
    env_raised,
    err_console,
    error,
    port_refused,
)
from openenv_gym.errors import EnvServerError, OpenEnvError
from openenv_gym.providers import PROVIDERS
from openenv_gym.server.sessions import DEFAULT_IDLE_TIMEOUT

__all__ = ["register", "serve_pool_web", "worker_record"]

#: Seconds between two checks that every worker still runs.
WATCH_PERIOD = 0.5


def worker_record(index: int, worker: Any) -> dict[str, Any]:
    """What a pool record keeps of one worker (whatever its provider exposes)."""
    container = getattr(worker, "container_id", None) or getattr(getattr(worker, "container", None), "id", None)
    return {"index": index, "address": worker.address, "pid": getattr(worker, "pid", None),
            "container": container, "log": getattr(worker, "log_path", None),
            "restarts": getattr(worker, "restarts", 0)}


def serve_pool_web(workers: Sequence[Any], title: str, port: int = 0,
                   host: str = "127.0.0.1") -> tuple[str, Callable[[], None]]:
    """Serve one ``/web`` page for a pool, reading each worker's sessions over its binary path.

    Args:
        workers: The pool's workers (their ``address`` is read at every refresh: restarts
            may change it).
        title: Page heading.
        port: TCP port (0: any free port).
        host: Interface (loopback by default).

    Returns:
        ``(url, stop)``: the page's URL and a function that stops the server.

    Raises:
        OSError: The port is taken.
    """
    import uvicorn
    from fastapi import FastAPI

    from openenv_gym.server.http_errors import HeadAsGet, LocalOnly
    from openenv_gym.server.web import openapi_31, pool_source, web_router

    stopping = threading.Event()
    app = FastAPI(title=title, docs_url=None, redoc_url=None)
    app.add_middleware(LocalOnly)  # no other site's page reads the sessions (DNS rebinding)
    app.add_middleware(HeadAsGet)  # added last: runs first, as on an env's own server
    source = pool_source([(f"w{i}", (lambda w=w: w.address)) for i, w in enumerate(workers)])
    app.include_router(web_router(source, stopping, title=title))
    openapi_31(app)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)  # connections queue from now on, before uvicorn's loop runs
    except OSError:
        sock.close()
        raise
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="pool-web",
                              daemon=True)
    thread.start()

    def stop() -> None:
        stopping.set()  # open event streams end now, so the server can shut down at once
        server.should_exit = True
        thread.join(10)
        sock.close()

    return f"http://{host}:{sock.getsockname()[1]}/web", stop


def _start(args: argparse.Namespace) -> int:
    from openenv_gym.catalog import get_env_info
    from openenv_gym.providers import get_provider

    try:
        info = get_env_info(args.env)
    except OpenEnvError as exc:
        return error(str(exc), "see `openenv-gym list`", USAGE)
    # A --name given was checked by the parser (pool_name): "" is refused there, not taken
    # for "no name". Only the generated one is checked here (an env whose name does not fit).
    name = f"{info.name}-{secrets.token_hex(3)}" if args.name is None else args.name
    if not pools.valid_name(name):
        return error(f"the generated pool name {name!r} is not valid",
                     f"give one with --name ({pools.NAME_RULE})", USAGE)
    if args.web:  # before any worker starts: a taken port is found in a moment, not after
        problem = bind_problem("127.0.0.1", args.web_port)
        if problem:
            return port_refused("--web-port", args.web_port, problem)
    try:
        provider = get_provider(args.provider, untrusted=info.untrusted)
    except (OpenEnvError, ValueError) as exc:
        return error(str(exc), "see `openenv-gym doctor` for what can run here")
    # The pool outlives the trainers that attach to it: a session one of them left (killed
    # without close()) must not stay until the session limit refuses every new trainer.
    provider.idle_timeout = args.idle_timeout or None

    record = pools.PoolRecord(name=name, env=info.name, provider=provider.name,
                              owner_pid=os.getpid())
    # The name is taken before the workers start (seconds): a second `start` of the same
    # name meanwhile is refused, instead of running a pool whose record replaces this one's.
    try:
        claimed = pools.claim(record)
    except pools.UnreadableRecordError as exc:  # a running pool may own it: not overwritten
        return error(f"the name {name!r} may be taken: {exc}",
                     f"{exc.fix()}; or choose another --name", USAGE)
    if not claimed:
        return error(f"a pool named {name!r} is already running",
                     f"choose another --name, or stop it: openenv-gym stop {name}", USAGE)
    workers: list[Any] = []
    try:
        with err_console.status(f"starting {args.n} × {info.name} on provider {provider.name}…"):
            try:
                workers = provider.start(info.name, args.n, args.env_kwargs, pool=name)
            except ENV_ARGUMENT_ERRORS as exc:
                return env_arguments_refused(exc)
            except EnvServerError as exc:
                return env_raised(exc)
            except (OpenEnvError, TypeError) as exc:
                return error(f"the pool did not start: {exc}",
                             f"`openenv-gym doctor` checks what {info.name} needs")
    finally:
        if not workers:
            pools.remove(record)
    stop_web: Callable[[], None] | None = None
    record.workers = [worker_record(i, w) for i, w in enumerate(workers)]
    try:
        if args.web:
            try:
                record.web, stop_web = serve_pool_web(workers, f"openenv_gym pool {name}",
                                                      args.web_port)
            except OSError as exc:
                return port_refused("--web-port", args.web_port, exc)
        pools.save(record)
        console.print(f"pool {name}: {len(record.workers)} × {info.name} on {provider.name}")
        for line in record.worker_lines():
            console.print(f"  {line}", soft_wrap=True, markup=False)
        console.print(f'attach from Python: gym.make("{info.gym_id}", base_url="<a worker\'s '
                      f'address>"); `openenv-gym ps --json` lists the addresses', soft_wrap=True,
                      markup=False)
        if record.web:
            console.print(f"web view: {record.web}")
        console.print(f"pool {name} is running; stop it with Ctrl-C or "
                      f"`openenv-gym stop {name}`", soft_wrap=True)
        _watch(workers, record)
    finally:
        if stop_web:
            stop_web()
        provider.stop_all(workers)
        pools.remove(record)
    console.print(f"pool {name} stopped")
    return OK


def _watch(workers: Sequence[Any], record: pools.PoolRecord) -> None:
    """Block until SIGTERM/SIGINT, replacing workers that die meanwhile and writing the pool's
    record again if it goes (:func:`pools.restore`)."""
    done = StopFlag()  # set in a signal handler: an Event there could hang `start` for good
    previous = {sig: signal.signal(sig, done.set) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not done.wait(WATCH_PERIOD):
            if pools.restore(record):
                err_console.print(f"the record of pool {record.name} was gone; written again")
            for i, worker in enumerate(workers):
                if done.is_set() or worker.alive():
                    continue
                err_console.print(f"worker w{i} died; restarting it")
                try:
                    worker.restart()
                except OpenEnvError as exc:
                    err_console.print(f"[red]worker w{i} could not restart:[/red] {escape(str(exc))}")
                    continue
                record.workers[i] = worker_record(i, worker)
                pools.save(record)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``start``."""
    p = sub.add_parser(
        "start", help="start a long-running pool of workers and print their addresses",
        description="Start N workers of ENV and keep them running until Ctrl-C or "
                    "`openenv-gym stop NAME`; dead workers are replaced.",
        epilog=exit_codes("stopped by Ctrl-C or `openenv-gym stop`",
                          "the pool could not start, or --web-port is taken"))
    p.add_argument("env", help="name or id, e.g. echo or OpenEnv/Echo-v0")
    p.add_argument("-n", "--num-workers", dest="n", type=positive_int, default=1,
                   help="number of workers (default 1)")
    p.add_argument("--provider", default="auto", choices=["auto", *PROVIDERS],
                   help="where workers run (default auto: docker when an engine is reachable)")
    p.add_argument("--name", type=pool_name,
                   help="pool name for ps/stop/logs: lowercase letters, digits, '_', '.', '-' "
                        "(default ENV-<random>)")
    add_env_kwargs(p)
    p.add_argument("--idle-timeout", type=non_negative_float, default=DEFAULT_IDLE_TIMEOUT,
                   help="seconds before a session nobody calls closes (default "
                        f"{DEFAULT_IDLE_TIMEOUT:g}; 0: never)")
    p.add_argument("--web", action="store_true", help="serve one live web page for the pool")
    p.add_argument("--web-port", type=port, default=0, help="port of that page (default: any free)")
    p.set_defaults(handler=_start)
