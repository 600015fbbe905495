"""``openenv-gym list`` and ``openenv-gym serve``: what envs exist, and serving one."""

from __future__ import annotations

import argparse
import importlib.util
import json

from rich.console import Console
from rich.table import Table

from openenv_gym.catalog import EnvInfo, all_envs, get_env_info
from openenv_gym.cli._ui import ENV_ARGUMENT_ERRORS, USAGE, env_arguments_refused, error
from openenv_gym.errors import OpenEnvError

__all__ = ["register", "runnable_providers"]


def runnable_providers(info: EnvInfo) -> list[str]:
    """Providers that can run ``info`` on this machine (with the reason checks done lazily)."""
    from openenv_gym.providers import PROVIDERS, provider_class

    names = []
    modules_ok = all(importlib.util.find_spec(m) is not None for m in info.modules)
    for name in PROVIDERS:
        try:
            ok, _ = provider_class(name).available()
        except OpenEnvError:
            ok = False
        # Docker images carry their own packages; other providers need them installed here.
        if ok and (name == "docker" or modules_ok):
            names.append(name)
    return names


def _list(args: argparse.Namespace) -> int:
    console = Console()
    table = Table(title="openenv_gym environments")
    for col in ("id", "name", "description", "providers here"):
        table.add_column(col)
    for info in all_envs():
        provs = runnable_providers(info)
        hint = ", ".join(provs) if provs else f"none (pip install 'openenv-gym[{info.extra}]')"
        table.add_row(info.gym_id, info.name, info.description, hint)
    console.print(table)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from openenv_gym.server.main import run_server

    try:
        info = get_env_info(args.env)
        kwargs = json.loads(args.env_kwargs)
    except (OpenEnvError, ValueError) as exc:
        return error(str(exc), code=USAGE)
    try:
        run_server(info.name, http_port=args.port, tcp_port=args.binary_port, host=args.host,
                   env_kwargs=kwargs, max_sessions=args.max_sessions,
                   idle_timeout=args.idle_timeout or None, isolate=True)
    except ENV_ARGUMENT_ERRORS as exc:
        return env_arguments_refused(exc)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``list`` and ``serve``."""
    p = sub.add_parser("list", help="list environments and which providers can run them here")
    p.set_defaults(handler=_list)

    p = sub.add_parser("serve", help="serve one environment over HTTP/JSON and the binary path")
    p.add_argument("env", help="name or id, e.g. echo or OpenEnv/Echo-v0")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    p.add_argument("--binary-port", type=int, default=0,
                   help="binary-protocol TCP port (default: any free port, shown in /health)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--env-kwargs", default="{}", help="JSON object of env keyword arguments")
    p.add_argument("--max-sessions", type=int, default=256)
    p.add_argument("--idle-timeout", type=float, default=600.0,
                   help="seconds before an idle session closes (0: never)")
    p.set_defaults(handler=_serve)
