"""``openenv-gym build`` and ``openenv-gym docker ps | stop | logs``: images and containers.

Every command acts only on images and containers carrying openenv_gym's labels. (The
top-level ``ps``/``stop``/``logs`` act on pools started by ``openenv-gym start``; the
``docker`` group sees every worker container, including those of a plain ``gym.make``.)

Example:
    $ openenv-gym build echo gym          # offline, progress + summary table
    $ openenv-gym docker ps               # our containers, their owners and states
    $ openenv-gym docker stop             # remove containers whose owner is gone
    $ openenv-gym docker stop --all       # remove all of ours
    $ openenv-gym docker logs openenv-gym-123-p1-docker-w0 --tail 20
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from openenv_gym.cli._args import exit_codes, non_negative_int
from openenv_gym.cli._ui import FAILED, USAGE, CliConsole, error, print_table
from openenv_gym.errors import OpenEnvError

__all__ = ["register", "containers_table"]


def _client() -> Any | None:
    from openenv_gym.providers.docker import DockerProvider

    ok, reason = DockerProvider.available()
    if not ok:
        error(reason, "`openenv-gym doctor` says how to start or reach a Docker engine")
        return None
    import docker

    return docker.from_env(timeout=120)


def _size(n: int) -> str:
    return f"{n / 1e6:.0f} MB"


def _build(args: argparse.Namespace) -> int:
    from openenv_gym.catalog import all_envs, get_env_info
    from openenv_gym.providers._docker_images import build_image, env_code_missing, prune_old

    console = CliConsole(stderr=True)
    try:
        infos = [get_env_info(e) for e in args.envs] if args.envs else [
            i for i in all_envs() if env_code_missing(i) is None]
    except OpenEnvError as exc:
        return error(str(exc), "see `openenv-gym list`", USAGE)
    client = _client()
    if client is None:
        return FAILED
    table = Table(title="openenv_gym images")
    for col in ("env", "image", "size", "time", "status"):
        table.add_column(col)
    failed: list[tuple[str, str]] = []
    with Progress(SpinnerColumn(), TextColumn("[bold]{task.fields[env]:<8}"),
                  TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        for info in infos:
            task = progress.add_task("resolving inputs", env=info.name, total=None)
            started = time.monotonic()

            def say(line: str, task: Any = task) -> None:
                progress.update(task, description=line[:90])

            try:
                result = build_image(client, info, progress=say, no_cache=args.no_cache)
            except OpenEnvError as exc:
                failed.append((info.name, str(exc)))
                progress.update(task, description="[red]failed", total=1, completed=1)
                # The first line only: a failed docker build's message goes on with the
                # build's last lines, the failing step's output last (printed below).
                table.add_row(info.name, "-", "-", f"{time.monotonic() - started:.1f} s",
                              f"[red]failed: {escape(str(exc).splitlines()[0][:300])}")
                continue
            if args.prune:
                prune_old(client, info, result.tag)
            status = "built" if result.built else "up to date"
            progress.update(task, description=f"[green]{status}", total=1, completed=1)
            table.add_row(info.name, result.tag, _size(result.size),
                          f"{time.monotonic() - started:.1f} s", status)
    CliConsole().print(table)
    for name, message in failed:
        error(f"{name}: {message}")
    if failed:
        return error(f"{len(failed)} of {len(infos)} images did not build (the errors above "
                     "say why)", "fix what they name, then build again; `openenv-gym doctor` "
                     "checks the engine")
    return 0


def _ours(client: Any) -> list[Any]:
    from openenv_gym.providers._docker_owner import project_filter

    return client.containers.list(all=True, ignore_removed=True, filters=project_filter())


def containers_table(rows: list[tuple[str, str, str, str, str, str]]) -> Table:
    """The ``docker ps`` table: one row per container (name, env, pool, owner, status, image).

    Names are never cut or wrapped, so they can be pasted into ``docker logs NAME``; the
    other columns give way on a narrow terminal.
    """
    table = Table(title="openenv_gym containers")
    width = max((len(row[0]) for row in rows), default=4)
    table.add_column("name", no_wrap=True, min_width=width)
    for col in ("env", "pool", "owner", "status", "image"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _ps(args: argparse.Namespace) -> int:
    from openenv_gym.providers._docker_owner import (
        LABEL_ENV, LABEL_HOST, LABEL_OWNER_PID, LABEL_POOL, host_id, stale,
    )

    client = _client()
    if client is None:
        return FAILED
    here = host_id()
    rows = []
    for c in _ours(client):
        owner = c.labels.get(LABEL_OWNER_PID, "?")
        if c.labels.get(LABEL_HOST) != here:
            owner += " (other host)"
        elif stale(c, here):
            owner += " [red](gone)"
        image = c.attrs.get("Config", {}).get("Image", "")
        rows.append((c.name, c.labels.get(LABEL_ENV, ""), c.labels.get(LABEL_POOL, ""), owner,
                     c.status, image))
    print_table(containers_table(rows), CliConsole())
    return 0


def _stop(args: argparse.Namespace) -> int:
    from openenv_gym.providers._docker_owner import remove, stale

    console = CliConsole()
    client = _client()
    if client is None:
        return FAILED
    ours = _ours(client)
    if args.names:
        chosen, unknown, ambiguous = [], [], []
        for n in args.names:
            hits = _named(ours, n)
            if not hits:
                unknown.append(n)
            elif len(hits) > 1:
                ambiguous.append(f"{n!r} ({len(hits)} containers)")
            chosen += [c for c in hits if c not in chosen]
        if ambiguous:
            return error(f"ambiguous id prefix {', '.join(ambiguous)}; nothing was removed",
                         "give the container's name or a longer id prefix "
                         "(`openenv-gym docker ps`)", USAGE)
        if unknown:
            return error(f"no openenv_gym container named {', '.join(map(repr, unknown))}; "
                         "nothing was removed", "`openenv-gym docker ps` lists them")
    elif args.all:
        chosen = ours
    else:
        chosen = [c for c in ours if stale(c)]
    for c in chosen:
        if remove(c):
            console.print(f"removed {c.name}")
        else:  # its owner's watchdog or another `docker stop` was first
            console.print(f"{c.name} was removed meanwhile")
    if chosen:
        # The sockets the removed containers served in their bind-mounted folders (the owner's
        # watchdog removes them; with both gone, nothing else would until the next trainer).
        from openenv_gym.providers._runtime import remove_orphaned_folders, runtime_dir

        remove_orphaned_folders(runtime_dir())
    if not chosen:
        console.print("nothing to stop" + ("" if args.all or args.names else
                                           " (no container whose owner is gone; --all stops all)"))
    return 0


def _named(containers: list[Any], name: str) -> list[Any]:
    """The containers ``name`` names, as ``docker rm`` reads it: a name, or an id prefix (more
    than one hit: the prefix is ambiguous, and a short one would take others' containers)."""
    return [c for c in containers if c.name == name] or [c for c in containers if c.id.startswith(name)]


def _logs(args: argparse.Namespace) -> int:
    client = _client()
    if client is None:
        return FAILED
    hits = _named(_ours(client), args.name)
    if len(hits) > 1:  # the first of them was printed, as if it were the one meant
        return error(f"ambiguous id prefix {args.name!r} ({len(hits)} containers)",
                     "give the container's name or a longer id prefix (`openenv-gym docker ps`)",
                     USAGE)
    if hits:
        print(hits[0].logs(tail=args.tail).decode(errors="replace"), end="")
        return 0
    return error(f"no openenv_gym container named {args.name!r}",
                 "`openenv-gym docker ps` lists them; pools' workers: `openenv-gym logs POOL`")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``build`` and the ``docker`` group (``ps``, ``stop``, ``logs``)."""
    p = sub.add_parser("build", help="build env container images offline (content-hashed tags)",
                       epilog=exit_codes("built or up to date",
                                         "no Docker engine, or an image did not build"))
    p.add_argument("envs", nargs="*", metavar="ENV",
                   help="env names or ids (default: every env with code in this checkout)")
    p.add_argument("--no-cache", action="store_true", help="rebuild every layer")
    p.add_argument("--prune", action="store_true", help="remove older tags of the built images")
    p.set_defaults(handler=_build)

    group = sub.add_parser("docker", help="worker containers: docker ps | stop | logs",
                           epilog=exit_codes("done", "no Docker engine answers"))
    # No subcommand is a usage error (exit 2): its help goes to stderr, as argparse's do.
    group.set_defaults(handler=lambda _: (group.print_help(sys.stderr), 2)[1])
    sub = group.add_subparsers(dest="docker_command", metavar="COMMAND")
    p = sub.add_parser("ps", help="list openenv_gym worker containers",
                       epilog=exit_codes("listed", "no Docker engine answers"))
    p.set_defaults(handler=_ps)

    p = sub.add_parser("stop", help="remove openenv_gym containers (default: orphaned ones)",
                       epilog=exit_codes("removed (or nothing to remove)",
                                         "no Docker engine answers"))
    p.add_argument("names", nargs="*", metavar="NAME", help="container names or id prefixes")
    p.add_argument("--all", action="store_true", help="remove every openenv_gym container")
    p.set_defaults(handler=_stop)

    p = sub.add_parser("logs", help="print a worker container's output",
                       epilog=exit_codes("printed", "no such container, or no Docker engine"))
    p.add_argument("name", help="container name or id prefix (see `openenv-gym docker ps`)")
    p.add_argument("--tail", type=non_negative_int, default=100, help="last N lines (default 100)")
    p.set_defaults(handler=_logs)
