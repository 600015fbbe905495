"""Shared output helpers of the CLI: one style for results, errors and their fixes.

Exit codes used by every command: :data:`OK` (0), :data:`FAILED` (1: the command ran and
something did not work), :data:`USAGE` (2: bad arguments; nothing was done); and, from any
command, 130 (Ctrl-C) and 141 (stdout was closed, as in ``openenv-gym doctor | head -1``): 128 +
the signal, as a shell reports a command SIGINT or SIGPIPE ended (``seq 1 1000000 | head -1``).
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from openenv_gym.errors import InvalidDataError, InvalidRequestError, UnknownEnvironmentError

__all__ = ["OK", "FAILED", "USAGE", "ENV_ARGUMENT_ERRORS", "CliConsole", "console", "error",
           "show_warning", "env_arguments_refused", "bind_problem", "port_refused", "print_table"]

OK, FAILED, USAGE = 0, 1, 2

#: What a worker raises when the env cannot be made from the arguments given (exit :data:`USAGE`).
ENV_ARGUMENT_ERRORS = (InvalidRequestError, InvalidDataError, UnknownEnvironmentError)


class CliConsole(Console):
    """A :class:`rich.console.Console` that leaves a closed pipe to the CLI's entry point.

    Rich exits 1 on a closed pipe, which is ``doctor``'s "the core does not work";
    :func:`openenv_gym.cli.main` turns the :class:`BrokenPipeError` into exit 141.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Text is printed as it is: rich's emoji codes turned a name the user typed, or a failed
        # build's Dockerfile line ("openenv:x:10001:..."), into "openenv❌10001:...".
        kwargs.setdefault("emoji", False)
        super().__init__(*args, **kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True  # as rich does: nothing more is written to a pipe nobody reads
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


#: Results go to stdout; errors and progress to stderr, so output can be piped.
console = CliConsole(highlight=False)
err_console = CliConsole(stderr=True, highlight=False)


def print_table(table: Table, out: Console | None = None) -> None:
    """Print ``table`` to ``out`` (default :data:`console`), wider than the terminal when its
    ``no_wrap`` columns need it.

    Rich fits a table to the console's width (80 when output is piped) by shrinking the other
    columns, down to nothing: `ps` of a pool with a 63-character name showed its env,
    provider, workers, pid and age as empty cells, headers included. Lines longer than the
    terminal wrap instead, as `docker ps`'s do, and stay whole in a pipe.
    """
    out = out or console
    size = Measurement.get(out, out.options.update(max_width=1 << 16), table)
    if size.minimum > out.width:  # a table that fits by folding its cells still does so
        out = CliConsole(file=out.file, width=size.maximum, highlight=False)
    out.print(table)


def error(message: str, fix: str | None = None, code: int = FAILED) -> int:
    """Print an error (and how to fix it) to stderr; returns ``code`` for the handler to return.

    Example:
        >>> error("no such pool 'x'", "see `openenv-gym ps`", code=USAGE)  # doctest: +SKIP
        2
    """
    # Messages are plain text: an install command's "[docker]" is not rich markup.
    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", soft_wrap=True)
    if fix:
        err_console.print(f"[yellow]fix:[/yellow] {escape(fix)}", soft_wrap=True)
    return code


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: object = None, line: str | None = None) -> None:
    """A :func:`warnings.showwarning` for the command line: ``warning: MESSAGE`` on stderr.

    Python's own format names the file and line of the CLI's code that triggered it, and
    prints that line of source: meant for a program's author, not for a command's user.
    """
    err_console.print(f"[yellow]warning:[/yellow] {escape(str(message))}", soft_wrap=True)


def env_arguments_refused(exc: Exception) -> int:
    """Report one of :data:`ENV_ARGUMENT_ERRORS` (the worker's message names the argument);
    returns :data:`USAGE`."""
    return error(str(exc), "change the --env-kwargs it names", USAGE)


def env_raised(exc: Exception) -> int:
    """Report an :class:`~openenv_gym.errors.EnvServerError` the env's constructor raised:
    usually a value of the wrong type in --env-kwargs.

    Returns:
        :data:`USAGE` for a :class:`TypeError` (the constructor refused its arguments: an
        unknown one, as Gym-v0's env takes any and passes them on, or a value of the wrong
        type; the message names it), as for the arguments the worker refuses itself
        (:func:`env_arguments_refused`); :data:`FAILED` for anything else.
    """
    return error(str(exc).split("\nTraceback")[0], "check the types and values in --env-kwargs "
                 "against the env's arguments (see its README)",
                 USAGE if isinstance(exc, TypeError) else FAILED)


def bind_problem(host: str, port: int) -> OSError | None:
    """Why a server could not listen on ``host:port`` now (None: it could; port 0 always can).

    A server that fails to bind later fails inside its framework (uvicorn exits 3 with its own
    message), so commands try the bind first and report it as theirs.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        # The servers listen on IPv4 only, and bind a name to its IPv4 address: "localhost"
        # that the resolver lists as ::1 first (RFC 6724 order) still serves.
        if not any(info[0] == socket.AF_INET for info in infos):
            return OSError(errno.EADDRNOTAVAIL, f"{host} is not an IPv4 address")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            # As the servers bind: a port whose old connections linger in TIME_WAIT is free.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as exc:  # socket.gaierror (unknown host) is one too
        return exc
    return None


def port_refused(flag: str, port: int, exc: OSError, host: str = "127.0.0.1") -> int:
    """Report that the port given by ``flag`` cannot be listened on.

    Returns:
        :data:`FAILED` (the port is taken, or not ours to take); :data:`USAGE` when the host is
        the problem (a name that resolves to nothing, an IPv6 address, an address of another
        machine): an argument no later try would make work.
    """
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        # The host is the problem, not the port.
        return error(f"cannot listen on {host}:{port} ({flag}): {exc}",
                     "--host must be an address of this machine: 127.0.0.1 (the default) "
                     "or localhost", USAGE)
    return error(f"cannot listen on {host}:{port} ({flag}): {exc}",
                 f"pick a free port with {flag} N ({flag} 0: any free port); "
                 f"`openenv-gym doctor --port {port}` checks one, "
                 f"`ss -ltnp | grep :{port}` shows who holds it")
