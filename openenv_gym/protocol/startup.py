"""The lines a starting worker prints on its standard output: that it serves, or what stopped it.

A worker that serves prints :func:`ready_line` (the Ray provider reads its addresses from
it). A worker whose env cannot be made (an unknown game, a bad argument, unusable data)
prints :func:`failure_line` before it exits; a provider that saw the worker exit during
startup finds that line in its output with :func:`failure_in` and raises the error it names,
with the type the env raised (:func:`~openenv_gym.errors.error_from_wire`), instead of a
bare "worker exited". A worker of another openenv-gym version that refuses the command line
(:func:`server_argv`) this one starts it with is named as such, a :class:`ProtocolError`.

Example:
    >>> from openenv_gym.errors import UnknownEnvironmentError
    >>> log = "Traceback ...\\n" + failure_line(UnknownEnvironmentError("no game 'pongx'"))
    >>> error = failure_in(log)
    >>> type(error).__name__, str(error)
    ('UnknownEnvironmentError', "no game 'pongx'")
    >>> parse_ready(ready_line("echo", "unix:///tmp/w0.sock", also=["tcp://127.0.0.1:5000"]))
    ('unix:///tmp/w0.sock', ['tcp://127.0.0.1:5000'])
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from openenv_gym.errors import OpenEnvError, ProtocolError, error_from_wire, error_to_wire

__all__ = ["failure_in", "failure_line", "parse_ready", "ready_line", "server_argv", "env_kwargs_from_json",
           "TUPLE_KEY"]

#: The one key of the JSON object a tuple among env kwargs travels as (JSON has arrays only):
#: a local env gets ``frameskip=(2, 5)`` as the tuple it is, and ALE refuses a list ("Invalid
#: frameskip type"). Written by :func:`~openenv_gym.providers.base.env_kwargs_json`.
TUPLE_KEY = "__tuple__"

_READY = "openenv-gym worker ready:"
_FAILED = "openenv-gym worker failed:"
#: argparse's last words when a worker of another openenv-gym version (an old custom Docker
#: image, a Ray node not upgraded) does not take the arguments this version starts it with.
#: ``__main__.py`` is argparse's own name for a ``-m`` module that names no ``prog``.
_ARGS_REFUSED = re.compile(r"(?:openenv_gym\.server|__main__\.py): error: "
                           r"((?:unrecognized arguments|the following arguments are required): .*)")


def env_kwargs_from_json(text: str) -> dict[str, Any]:
    """The env kwargs a worker's ``--env-kwargs`` carries, their tuples tuples again.

    Example:
        >>> env_kwargs_from_json('{"frameskip": {"__tuple__": [2, 5]}, "tickers": ["A"]}')
        {'frameskip': (2, 5), 'tickers': ['A']}
    """
    return json.loads(text, object_hook=_tuple_of)


def _tuple_of(obj: dict[str, Any]) -> Any:
    return tuple(obj[TUPLE_KEY]) if obj.keys() == {TUPLE_KEY} else obj


def server_argv(env: str, kwargs_json: str, *, unix: str | None = None,
                tcp_port: int | None = None, host: str | None = None, owner_pid: int | None = None,
                owner_dir: str | None = None, private_tmp: tuple[str, str] | None = None,
                tmpdir: str | None = None, idle_timeout: float | None = None) -> list[str]:
    """The arguments after ``python -m openenv_gym.server`` that start a provider's worker:
    no idle timeout unless one is given (its owner stops it), and what else the provider gives it.

    Args:
        env: Catalog name of the env to serve.
        kwargs_json: The env's keyword arguments as JSON.
        unix: Path of the Unix socket to serve on.
        tcp_port: TCP port to serve on (0: any free one).
        host: Address the TCP port binds.
        owner_pid: Exit when this process is gone.
        owner_dir: Exit when this folder is gone (a sweep finds the worker by it).
        private_tmp: ``(mount point, tmpfs options)`` of a private tmpfs for its sandboxes.
        tmpdir: A folder for its sandboxes, without a tmpfs.
        idle_timeout: Seconds after which a session nobody calls closes (None: never). A
            long-running pool (``openenv-gym start``) needs one: the trainers that attach to
            it come and go, and one that dies without ``close()`` would hold its sessions
            (and a ``--max-sessions`` slot each) for the pool's whole life.

    Example:
        >>> server_argv("echo", "{}", unix="/tmp/w0.sock", owner_pid=42)
        ['echo', '--unix', '/tmp/w0.sock', '--env-kwargs', '{}', '--owner-pid', '42', '--idle-timeout', '0']
    """
    argv = [env]
    if unix is not None:
        argv += ["--unix", unix]
    if tcp_port is not None:
        argv += ["--tcp-port", str(tcp_port)]
    if host is not None:
        argv += ["--host", host]
    argv += ["--env-kwargs", kwargs_json]
    if owner_pid is not None:
        argv += ["--owner-pid", str(owner_pid)]
    if owner_dir is not None:
        argv += ["--owner-dir", owner_dir]
    argv += ["--idle-timeout", repr(float(idle_timeout)) if idle_timeout else "0"]
    if private_tmp is not None:
        argv += ["--private-tmp", private_tmp[0], "--private-tmp-options", private_tmp[1]]
    if tmpdir is not None:
        argv += ["--tmpdir", tmpdir]
    return argv


def ready_line(env: str, binary: str | None, also: Sequence[str] = (), http: str | None = None) -> str:
    """The line a worker prints once it serves.

    Args:
        env: Catalog name of the env it serves.
        binary: Its first binary address (None: it serves HTTP only).
        also: Its other binary addresses.
        http: Its HTTP address, if it serves HTTP.
    """
    fields = [f"env={env}"] + ([f"binary={binary}"] if binary else []) + [f"also={a}" for a in also]
    return " ".join([_READY, *fields] + ([f"http={http}"] if http else []))


def parse_ready(line: str) -> tuple[str | None, list[str]] | None:
    """The binary addresses a :func:`ready_line` names: ``(first, others)``; None for any
    other line."""
    start = line.find(_READY)
    if start < 0:
        return None
    fields = [f.split("=", 1) for f in line[start + len(_READY):].split() if "=" in f]
    binary = next((value for key, value in fields if key == "binary"), None)
    return binary, [value for key, value in fields if key == "also"]


def failure_line(exc: BaseException) -> str:
    """The line a worker prints when making its env raised ``exc`` (before it exits)."""
    return f"{_FAILED} {json.dumps(error_to_wire(exc))}"


def failure_in(output: str) -> OpenEnvError | None:
    """The error a worker's output says stopped it (its last :func:`failure_line`), or None.

    Args:
        output: The worker's output, or its last lines.

    Returns:
        The typed error, rebuilt as the worker described it; a :class:`ProtocolError` naming
        the version skew when the worker refused its command line (:func:`server_argv`'s).
    """
    for line in reversed(output.splitlines()):
        start = line.find(_FAILED)
        if start >= 0:
            try:
                return error_from_wire(json.loads(line[start + len(_FAILED):]))
            except ValueError:  # cut short: the line is not whole
                return None
        refused = _ARGS_REFUSED.search(line)
        if refused:
            return _version_skew(refused.group(1))
    return None


def _version_skew(detail: str) -> ProtocolError:
    """The error for a worker whose openenv_gym refused this version's command line."""
    from openenv_gym import __version__  # late: this module loads while the package does

    return ProtocolError(
        f"the worker's openenv_gym refused the command line this trainer's openenv-gym "
        f"{__version__} starts it with ({detail}): the worker runs another openenv-gym "
        "version. Run the same version on both sides: rebuild a custom Docker image "
        "(provider_options['image']) FROM the image `openenv-gym build ENV` makes now, or "
        "install this version on the Ray nodes")
