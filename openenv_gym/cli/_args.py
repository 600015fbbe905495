"""Argument types and help text shared by the commands, so each check is written once.

A value a type here refuses ends the command before it does anything: argparse prints the
usage and ``error: argument FLAG: WHY`` and exits with :data:`~openenv_gym.cli._ui.USAGE` (2).

Example:
    >>> parser = argparse.ArgumentParser(epilog=exit_codes("served until Ctrl-C"))
    >>> add_env_kwargs(parser)
    >>> _ = parser.add_argument("--port", type=port, default=8000)
    >>> parser.parse_args(["--env-kwargs", '{"max_steps": 5}', "--port", "0"])
    Namespace(env_kwargs={'max_steps': 5}, port=0)
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Callable

__all__ = ["json_object", "json_value", "port", "positive_int", "non_negative_int",
           "positive_float", "non_negative_float", "pool_name", "add_env_kwargs", "exit_codes"]

#: Shown in ``--env-kwargs``'s help and in every refusal of it.
ENV_KWARGS_EXAMPLE = """'{"max_steps": 10}'"""


def json_object(text: str) -> dict[str, Any]:
    """``--env-kwargs``: a JSON object (env keyword arguments are names -> values).

    Example:
        >>> json_object('{"game": "pong"}')
        {'game': 'pong'}
    """
    expected = f"must be a JSON object, e.g. --env-kwargs {ENV_KWARGS_EXAMPLE}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{expected}; {text!r} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
                type(None): "null"}[type(value)]
        raise argparse.ArgumentTypeError(f"{expected}; got a JSON {kind}: {text!r}")
    return value


def json_value(text: str) -> Any:
    """``--action``: any JSON value.

    Example:
        >>> json_value('{"message": "hi"}')
        {'message': 'hi'}
    """
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"must be JSON, e.g. '{{\"message\": \"hi\"}}'; "
                                         f"{text!r} is not ({exc})") from None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):  # "nan" and "inf" parse, but mean nothing as seconds
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _checked(convert: Callable[[str], Any], ok: Callable[[Any], bool],
             what: str) -> Callable[[str], Any]:
    """A ``type=`` that converts with ``convert`` and refuses values that are not ``ok``."""
    def check(text: str) -> Any:
        value = convert(text)
        if not ok(value):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    return check


#: ``-n``, ``--steps``, ``--max-sessions``...: at least 1.
positive_int = _checked(_int, lambda v: v >= 1, "at least 1")
#: ``--tail``, ``--warmup``: 0 or more.
non_negative_int = _checked(_int, lambda v: v >= 0, "0 or more")
#: Seconds to wait for something.
positive_float = _checked(_float, lambda v: v > 0, "more than 0")
#: Seconds where 0 has a meaning of its own (``--idle-timeout 0``: never).
non_negative_float = _checked(_float, lambda v: v >= 0, "0 or more")


def port(text: str) -> int:
    """A TCP port, 0..65535 (0: any free port, where the command says so).

    Example:
        >>> port("8000")
        8000
    """
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0..65535, got {text!r}")
    return value


def pool_name(text: str) -> str:
    """``start --name``: a name ``ps``/``stop``/``logs`` can find the pool by
    (:func:`openenv_gym.cli.pools.valid_name`; it names the pool's record file and folders).

    An empty name is refused, not taken as "no name": leaving ``--name`` out generates one.

    Example:
        >>> pool_name("demo-1")
        'demo-1'
    """
    from openenv_gym.cli.pools import NAME_RULE, valid_name  # the one rule, where records are

    generated = "or leave --name out for a generated name (ENV-<random>)"
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must not be empty, got {text!r}; give a pool name "
                                         f"({NAME_RULE}), {generated}")
    if not valid_name(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a pool name: use {NAME_RULE}; "
                                         f"{generated}")
    return text


def add_env_kwargs(parser: argparse.ArgumentParser) -> None:
    """Add ``--env-kwargs`` (parsed to a dict by :func:`json_object`) the same way everywhere."""
    # A string default goes through ``type`` too, so each parse gets a fresh dict.
    parser.add_argument("--env-kwargs", type=json_object, default="{}", metavar="JSON",
                        help=f"JSON object of env keyword arguments, e.g. {ENV_KWARGS_EXAMPLE}")


def exit_codes(ok: str, failed: str | None = None) -> str:
    """The ``--help`` epilog of a command: what each of its exit codes means.

    Args:
        ok: When it exits 0 (``"served until Ctrl-C"``).
        failed: When it exits 1 (None: it has no failure of its own).

    Example:
        >>> exit_codes("listed")
        'exit codes: 0 listed; 2 bad arguments (nothing was done).'
    """
    parts = [f"0 {ok}"]
    if failed:
        parts.append(f"1 {failed} (the error says what, and a `fix:` line how to fix it)")
    parts.append("2 bad arguments (nothing was done)")
    return "exit codes: " + "; ".join(parts) + "."
