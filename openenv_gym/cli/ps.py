"""``openenv-gym ps``, ``stop`` and ``logs``: the pools that ``openenv-gym start`` keeps running.

Pools of every provider are found through their records (:mod:`openenv_gym.cli.pools`);
``stop`` asks a pool's owner to stop, and the owner stops its workers or containers itself.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from rich.markup import escape
from rich.table import Table

from openenv_gym.cli import pools
from openenv_gym.providers._docker_owner import owner_alive
from openenv_gym.cli._args import exit_codes, non_negative_int, positive_float
from openenv_gym.cli._ui import OK, USAGE, console, err_console, error, print_table

__all__ = ["register"]


def _worker_alive(worker: dict) -> bool | None:
    if worker.get("pid"):
        return owner_alive(int(worker["pid"]), "")
    return None  # containers and actors: their owner watches them


def _uptime(seconds: float) -> str:
    """How long a pool has run, in the two largest units, as ``docker ps`` says it ("Up 3
    days"): a week-old pool's "604800 s" had to be divided out.

    Example:
        >>> _uptime(42.4), _uptime(750), _uptime(3 * 3600 + 120), _uptime(3 * 86400 + 7200)
        ('42 s', '12 min', '3 h 2 min', '3 d 2 h')
    """
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def _ps(args: argparse.Namespace) -> int:
    records, unread = pools.scan()
    for problem in unread:  # on stderr: `ps --json` stays one JSON document
        err_console.print(f"[yellow]note:[/yellow] left out: {escape(str(problem))}; "
                          f"{escape(problem.fix())}", soft_wrap=True)
    if args.json:
        console.print_json(json.dumps([asdict(r) for r in records]))
        return OK
    if not records:
        console.print("no pools running (start one: openenv-gym start ENV -n N)")
        return OK
    table = Table(title="openenv_gym pools")
    for col in ("pool", "env", "provider", "workers", "owner pid", "up"):
        # The name (what `stop` and `logs` take) keeps its line: the other columns give way.
        table.add_column(col, overflow="fold", no_wrap=col == "pool")
    for r in records:
        states = [_worker_alive(w) for w in r.workers]
        down = sum(1 for s in states if s is False)
        # A record is written when the name is taken, before the workers start (seconds).
        workers = f"{len(states) - down}/{len(states)} up" if states else "starting"
        table.add_row(r.name, r.env, r.provider, workers, str(r.owner_pid),
                      _uptime(time.time() - r.started))
    print_table(table, console)
    for r in records:
        if r.web:
            # Below the table, whole: a table cell folds or crops a URL in a narrow terminal,
            # and a cut URL cannot be clicked or copied.
            console.print(f"{r.name} web view: {r.web}", soft_wrap=True, markup=False)
    if args.workers:
        for r in records:
            for line in r.worker_lines():
                console.print(f"{r.name} {line}", soft_wrap=True, markup=False)
    return OK


def _frozen(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, Ctrl-Z, a debugger): it runs nothing,
    a SIGTERM included, until continued."""
    from openenv_gym.providers.process import frozen

    return bool(frozen(pid))


def _not_running(names: list[str], running: list[str]) -> int:
    """Report pools that are not running, naming a record of theirs that cannot be read
    (its owner may run: `stop` cannot signal it, and `start` will not take the name)."""
    for name in names:
        problem = pools.unreadable(name)
        if problem is not None:
            return error(f"no running pool named {name!r} can be read: {problem}", problem.fix())
    return error(f"no running pool named {', '.join(map(repr, names))}",
                 f"running: {', '.join(running) or 'none'} (see `openenv-gym ps`)")


def _stop(args: argparse.Namespace) -> int:
    if not args.names and not args.all:
        return error("name the pools to stop, or pass --all", "see `openenv-gym ps`", USAGE)
    running = {r.name: r for r in pools.load_all()}
    unknown = [n for n in args.names if n not in running]
    if unknown:
        return _not_running(unknown, list(running))
    targets = list(running.values()) if args.all else [running[n] for n in args.names]
    failed = []
    for record in targets:
        if pools.stop(record, timeout=args.timeout):
            console.print(f"stopped pool {record.name}")
        else:
            failed.append(record.name)
    if failed:
        which = f"{'pool' if len(failed) == 1 else 'pools'} {', '.join(failed)}"
        frozen = [r for r in targets if r.name in failed and _frozen(r.owner_pid)]
        if frozen:
            # It acts on the SIGTERM already sent once resumed: waiting longer cannot help.
            pids = " ".join(str(r.owner_pid) for r in frozen)
            return error(f"{which} did not stop within {args.timeout:g} s: the "
                         f"`openenv-gym start` of {', '.join(r.name for r in frozen)} (pid {pids}) "
                         "is stopped (Ctrl-Z, SIGSTOP or a debugger)",
                         f"resume it and it stops its pool: kill -CONT {pids} (or `fg` in its "
                         "terminal)")
        return error(f"{which} did not stop within {args.timeout:g} s",
                     "look at their logs (`openenv-gym logs NAME`); their owners may be stuck")
    if not targets:
        console.print("no pools running")
    return OK


def _container_logs(container: str, tail: int) -> str:
    try:
        import docker

        return docker.from_env().containers.get(container).logs(tail=tail).decode(errors="replace")
    except Exception as exc:  # the engine or the container may be gone; say so instead
        return f"(no logs from container {container[:12]}: {exc})"


def _no_output(record: pools.PoolRecord) -> str:
    """What ``logs`` prints for a worker with nothing to show."""
    if record.provider == "ray":
        # Its server writes to a pipe read by its Ray actor, in the Ray session of the
        # pool's owner; the record names no cluster or actor, so this process cannot ask it.
        return ("(a Ray worker keeps no log file: its Ray actor holds the last lines of its "
                "output, which the process that placed the worker reads with worker.logs() (a "
                "vector env's: envs.unwrapped.workers[i].logs()); this command cannot reach the "
                f"actor. This pool's is its `openenv-gym start` (pid {record.owner_pid}), which "
                "does not show them: start the pool with --provider process or docker for "
                "output that `openenv-gym logs` shows)")
    return "(no output yet)"


def _logs(args: argparse.Namespace) -> int:
    record = pools.find(args.name)
    if record is None:
        return _not_running([args.name], [r.name for r in pools.load_all()])
    if not record.workers:
        return error(f"pool {record.name} is still starting: none of its workers is up yet",
                     "run this again once `openenv-gym start` has printed them "
                     "(`openenv-gym ps` then counts them up)")
    if args.worker is not None and args.worker not in {w["index"] for w in record.workers}:
        return error(f"pool {record.name} has no worker {args.worker}",
                     f"its workers are 0..{len(record.workers) - 1}", USAGE)
    if args.follow:
        return _follow(record, args.worker, args.tail)
    if args.tail == 0:  # as `tail -n 0` and `docker logs --tail 0`: no lines at all
        return OK
    texts = pools.worker_logs(record, args.worker, args.tail)
    for worker in record.workers:
        if worker["index"] not in texts:
            continue
        text = texts[worker["index"]]
        if not text and worker.get("container"):
            text = _container_logs(worker["container"], args.tail)
        console.rule(f"{record.name} w{worker['index']} ({worker['address']})")
        console.print(text or _no_output(record), markup=False, highlight=False, soft_wrap=True)
    return OK


#: Seconds between two looks at the logs ``logs --follow`` follows.
FOLLOW_PERIOD = 0.2


def _follow(record: pools.PoolRecord, index: int | None, tail: int) -> int:
    """``logs --follow``: the last ``tail`` lines of each worker's log, then its new lines as
    they are written (prefixed ``wI |`` when several workers are followed), until the pool
    stops (exit 0) or Ctrl-C."""
    workers = [w for w in record.workers if index is None or w["index"] == index]
    if not all(w.get("log") for w in workers):
        # Containers and Ray actors keep no log file this process can read as it grows.
        containers = [w["container"][:12] for w in workers if w.get("container")]
        return error(f"pool {record.name}'s workers ({record.provider}) keep no log file to "
                     "follow", f"follow a container with `docker logs -f {containers[0]}`"
                     if containers else "start the pool with --provider process")
    followers = {w["index"]: pools.LogFollower(w["log"], tail) for w in workers}
    try:
        running = True
        while True:
            for i, follower in followers.items():
                prefix = f"w{i} | " if len(followers) > 1 else ""
                for line in follower.read(final=not running):
                    console.print(prefix + line, markup=False, highlight=False, soft_wrap=True)
            if not running:
                return OK
            # Its owner gone, its workers went with it: what they wrote last is read once more.
            running = record.alive()
            if running:
                time.sleep(FOLLOW_PERIOD)
    finally:
        for follower in followers.values():
            follower.close()


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``ps``, ``stop`` and ``logs``."""
    p = sub.add_parser("ps", help="list pools started by `openenv-gym start`",
                       description="List running pools (any provider).",
                       epilog=exit_codes("listed (also when none runs)"))
    p.add_argument("--json", action="store_true", help="print the pool records as JSON")
    p.add_argument("-w", "--workers", action="store_true", help="also list each worker")
    p.set_defaults(handler=_ps)

    p = sub.add_parser("stop", help="stop pools started by `openenv-gym start`",
                       description="Stop pools: their owners stop every worker/container.",
                       epilog=exit_codes("stopped", "an unknown or stuck pool"))
    p.add_argument("names", nargs="*", metavar="NAME", help="pool names (see `openenv-gym ps`)")
    p.add_argument("--all", action="store_true", help="stop every pool")
    p.add_argument("--timeout", type=positive_float, default=30.0,
                   help="seconds to wait per pool (default 30)")
    p.set_defaults(handler=_stop)

    p = sub.add_parser("logs", help="show the logs of a pool's workers",
                       description="Print the last lines of each worker's log; with -f, "
                                   "then the lines the workers write, until the pool stops "
                                   "or Ctrl-C.",
                       epilog=exit_codes("printed (with -f: the pool stopped)",
                                         "no running pool has that name"))
    p.add_argument("name", metavar="NAME", help="pool name (see `openenv-gym ps`)")
    p.add_argument("-w", "--worker", type=non_negative_int, help="only this worker index")
    p.add_argument("--tail", type=non_negative_int, default=50,
                   help="lines per worker (default 50; 0: none)")
    p.add_argument("-f", "--follow", action="store_true",
                   help="keep printing new lines, as `docker logs -f` (process workers)")
    p.set_defaults(handler=_logs)
