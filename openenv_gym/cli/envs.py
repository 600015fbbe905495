"""``openenv-gym list`` and ``openenv-gym serve``: what envs exist, and serving one."""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import shutil
import socket

from rich.markup import escape
from rich.table import Table

from openenv_gym.catalog import EnvInfo, all_envs, get_env_info
from openenv_gym.cli._args import (
    add_env_kwargs,
    exit_codes,
    non_negative_float,
    port,
    positive_int,
)
from openenv_gym.cli._ui import (
    ENV_ARGUMENT_ERRORS,
    OK,
    USAGE,
    CliConsole,
    bind_problem,
    env_arguments_refused,
    env_raised,
    error,
    port_refused,
)
from openenv_gym.errors import EnvServerError, OpenEnvError, ProviderUnavailableError
from openenv_gym.server.sessions import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS

__all__ = ["missing_here", "register", "runnable_providers"]


def missing_here(info: EnvInfo) -> tuple[list[str], str]:
    """What ``info`` needs outside Docker that this machine lacks (its modules, then its
    programs), and how to install it ("" when nothing says how)."""
    modules = [m for m in info.modules if importlib.util.find_spec(m) is None]
    programs = [p for p in info.programs if not shutil.which(p)]
    fixes = [f"pip install 'openenv-gym[{info.extra}]'"] if modules and info.extra else []
    if programs:
        fixes.append(f"install {', '.join(programs)} (apt-get install {' '.join(programs)})")
    return modules + programs, " and ".join(fixes)


def runnable_providers(info: EnvInfo) -> list[str]:
    """Providers that can run ``info`` on this machine (with the reason checks done lazily)."""
    from openenv_gym.providers import PROVIDERS, provider_class

    names = []
    # Docker images carry the env's packages and programs; other providers need them here.
    here_ok = not missing_here(info)[0]
    for name in PROVIDERS:
        try:
            ok, _ = provider_class(name).available()
        except OpenEnvError:
            ok = False
        if ok and (name == "docker" or here_ok):
            names.append(name)
    return names


def _exposed(host: str) -> bool:
    """Whether ``host`` names an address that is not a loopback one (127.0.0.0/8, ::1); False
    for a name that does not resolve, which the bind check names."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return not all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback for info in infos)


def _list(args: argparse.Namespace) -> int:
    console = CliConsole()
    table = Table(title="openenv_gym environments")
    for col in ("id", "name", "description", "providers here"):
        table.add_column(col)
    for info in all_envs():
        provs = runnable_providers(info)
        if provs:
            hint = ", ".join(provs)
        else:  # as doctor says it: not every env has an extra (Git-v0 needs a program)
            missing, install = missing_here(info)
            hint = (f"none (missing {', '.join(missing)}{f': {install}' if install else ''})"
                    if missing else "none (`openenv-gym doctor` says why)")
        table.add_row(*map(escape, (info.gym_id, info.name, info.description, hint)))
    console.print(table)
    return OK


def _serve(args: argparse.Namespace) -> int:
    from openenv_gym.cli._supervise import supervised
    from openenv_gym.server.main import run_server

    try:
        info = get_env_info(args.env)
    except OpenEnvError as exc:
        return error(str(exc), "see `openenv-gym list`", USAGE)
    if args.port == args.binary_port != 0:
        return error(f"--port and --binary-port are both {args.port}: the two servers need a "
                     "port each", "leave --binary-port out (any free port), or give another", USAGE)
    if _exposed(args.host):
        forwarded = args.port or "PORT"  # the tunnel's command for the port asked for
        # Neither server authenticates anyone, and the binary one skips the HTTP checks: on
        # another interface, every machine that reaches it drives (and, for Coding and Git,
        # runs code through) every session.
        return error(f"--host {args.host} is not a loopback address: the server has no "
                     "authentication, and any machine that reaches it could drive its sessions "
                     "(and run code in Coding and Git)",
                     "serve on 127.0.0.1 (the default) or localhost; to reach it from another "
                     "machine, forward the port over SSH "
                     f"(ssh -L {forwarded}:127.0.0.1:{forwarded} HOST)", USAGE)
    for flag, number in (("--port", args.port), ("--binary-port", args.binary_port)):
        problem = bind_problem(args.host, number)
        if problem:
            return port_refused(flag, number, problem, args.host)

    def serve(owner: int | None) -> int:
        try:
            run_server(info.name, http_port=args.port, tcp_port=args.binary_port, host=args.host,
                       env_kwargs=args.env_kwargs, max_sessions=args.max_sessions,
                       idle_timeout=args.idle_timeout or None, isolate=True, owner_pid=owner)
        except ENV_ARGUMENT_ERRORS as exc:
            return env_arguments_refused(exc)
        except EnvServerError as exc:  # the constructor raised (often a value of the wrong type)
            return env_raised(exc)
        except ProviderUnavailableError as exc:  # the env cannot be made here (a missing extra)
            return error(f"cannot serve {info.name}: {exc}", f"`openenv-gym doctor` checks what {info.name} needs")
        return OK

    # In a child this process supervises: what a server killed mid-step leaves running
    # (a step's child, in a session of its own) is ended, not left to init.
    return supervised(serve) if getattr(args, "owns_process", False) else serve(None)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``list`` and ``serve``."""
    p = sub.add_parser("list", help="list environments and which providers can run them here",
                       epilog=exit_codes("listed"))
    p.set_defaults(handler=_list)

    p = sub.add_parser("serve", help="serve one environment over HTTP/JSON and the binary path",
                       description="Serve ENV until Ctrl-C: HTTP/JSON, the binary path "
                                   "(advertised in /health) and the live view at /web.",
                       epilog=exit_codes("stopped by Ctrl-C or SIGTERM",
                                         "--port or --binary-port is taken"))
    p.add_argument("env", help="name or id, e.g. echo or OpenEnv/Echo-v0")
    p.add_argument("--port", type=port, default=8000,
                   help="HTTP port (default 8000; 0: any free port, printed when ready)")
    p.add_argument("--binary-port", type=port, default=0,
                   help="binary-protocol TCP port (default: any free port, shown in /health)")
    p.add_argument("--host", default="127.0.0.1", help="loopback interface to bind (default 127.0.0.1; localhost also works)")
    add_env_kwargs(p)
    p.add_argument("--max-sessions", type=positive_int, default=DEFAULT_MAX_SESSIONS,
                   help=f"most sessions at once (default {DEFAULT_MAX_SESSIONS})")
    p.add_argument("--idle-timeout", type=non_negative_float, default=DEFAULT_IDLE_TIMEOUT,
                   help=f"seconds before an idle session closes (default {DEFAULT_IDLE_TIMEOUT:g}; 0: never)")
    p.set_defaults(handler=_serve)
