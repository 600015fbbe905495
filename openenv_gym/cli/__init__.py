"""The ``openenv-gym`` command line.

Each module in :data:`COMMAND_MODULES` adds its subcommands through ``register(subparsers)``;
a subcommand's handler returns the process exit code (0 ok, 1 failure, 2 usage error; any
command: 130 after Ctrl-C, 141 when stdout was closed, as by ``| head``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from openenv_gym import __version__
from openenv_gym._stdout import stdout_to_devnull

__all__ = ["main", "build_parser", "COMMAND_MODULES"]

#: Modules that contribute subcommands, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "openenv_gym.cli.envs",
    "openenv_gym.cli.start",
    "openenv_gym.cli.ps",
    "openenv_gym.cli.bench",
    "openenv_gym.cli.doctor",
    "openenv_gym.cli.init",
    "openenv_gym.cli.docker",
)


def build_parser() -> argparse.ArgumentParser:
    """The parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="openenv-gym",
        description="Run reinforcement-learning environments as isolated remote services.",
    )
    # As `docker --version`, `pip --version`: the first thing a bug report or a version
    # mismatch (ProtocolError) asks for.
    parser.add_argument("--version", action="version", version=f"openenv-gym {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``openenv-gym``; returns the exit code (quietly, 130 after Ctrl-C and
    141 when stdout was closed).

    Args:
        argv: The arguments; None: ``sys.argv[1:]``, and the process is the command's own.
    """
    try:
        try:
            # Inside the try: building the parser imports every command module (rich, numpy,
            # the providers), which takes a moment in which a Ctrl-C is as likely as in a
            # command.
            parser = build_parser()
            args = parser.parse_args(argv)
            if not getattr(args, "handler", None):
                # A usage error (exit 2), reported on stderr as argparse reports its own:
                # `openenv-gym > file` leaves the file empty, as a failed command should.
                parser.print_help(sys.stderr)
                return 2
            # The command line's own process (argv from sys.argv) may be split in two, as
            # `serve` does (cli/_supervise.py); a caller passing argv embeds the CLI, and keeps
            # its process, signal handlers and children as they are.
            args.owns_process = argv is None
            with warnings.catch_warnings():  # an embedding caller's hook is back afterwards
                from openenv_gym.cli._ui import show_warning

                warnings.showwarning = show_warning
                return int(args.handler(args) or 0)
        finally:
            if argv is None:  # what is still buffered meets a closed pipe here, not at exit
                sys.stdout.flush()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        if argv is None:
            stdout_to_devnull()
        return 141


if __name__ == "__main__":
    sys.exit(main())
