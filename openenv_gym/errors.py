"""Typed errors raised by openenv_gym.

Every failure that can reach a user is one of these classes. Errors raised inside a
worker travel over the wire as ``{"type": <name>, "message": <text>}`` and are rebuilt on
the client by :func:`error_from_wire`, so ``except InvalidActionError`` works the same
whether the action was rejected locally or by a server in a container. An exception of the
env's own becomes an :class:`EnvServerError` that is also an instance of its built-in class
(``"builtin": "KeyError"`` on the wire), so ``except KeyError`` works as it would locally.
A refusal of keyword arguments the env does not take names them as ``"unknown_arguments"``
(:attr:`InvalidRequestError.unknown_arguments`).

Example:
    >>> from openenv_gym.errors import InvalidActionError, error_from_wire
    >>> err = error_from_wire({"type": "InvalidActionError", "message": "bad"})
    >>> isinstance(err, InvalidActionError), str(err)
    (True, 'bad')
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterable
from typing import Any

from gymnasium.error import ResetNeeded

__all__ = [
    "OpenEnvError",
    "InvalidActionError",
    "InvalidRequestError",
    "InvalidDataError",
    "ResetNeededError",
    "SessionNotFoundError",
    "SessionLimitError",
    "EnvServerError",
    "ProtocolError",
    "WorkerError",
    "WorkerConnectionError",
    "WorkerTimeoutError",
    "WorkerCrashedError",
    "ProviderUnavailableError",
    "UnknownEnvironmentError",
    "env_error",
    "error_from_wire",
    "error_to_wire",
    "headline",
]


class OpenEnvError(Exception):
    """Base class of every error openenv_gym raises.

    Args:
        message: What went wrong and, where possible, how to fix it.

    Example:
        >>> issubclass(WorkerTimeoutError, OpenEnvError), OpenEnvError("no").http_status
        (True, 500)
    """

    #: HTTP status the server answers with when this error ends a request.
    http_status: int = 500
    #: The keyword arguments given to the env that it takes none of, when this error is the
    #: env's refusal of them (see :attr:`InvalidRequestError.unknown_arguments`; a Gym-v0
    #: env's is Gymnasium's own ``TypeError``, an :class:`EnvServerError`); ``()`` otherwise.
    unknown_arguments: tuple[str, ...] = ()


class InvalidActionError(OpenEnvError, ValueError):
    """The action does not fit the env's action space or action model.

    The session is untouched: fix the action and call ``step`` again.

    Example:
        >>> issubclass(InvalidActionError, ValueError), InvalidActionError.http_status
        (True, 422)
    """

    http_status = 422


class InvalidRequestError(OpenEnvError, ValueError):
    """A request is malformed: unknown operation, missing field, wrong type, too large.

    Args:
        *args: The message, as for any exception.
        unknown_arguments: The keyword arguments refused because the env takes none of that
            name, when that is the refusal (see :attr:`unknown_arguments`).

    Example:
        >>> issubclass(InvalidRequestError, ValueError), InvalidRequestError.http_status
        (True, 400)
        >>> InvalidRequestError("no such argument", unknown_arguments=["step_timeout"]).unknown_arguments
        ('step_timeout',)
    """

    http_status = 400
    #: The keyword arguments given to the env that it takes none of (``("step_timeout",)``
    #: for ``gym.make("OpenEnv/Echo-v0", step_timeout=5)``): what the worker refused, named
    #: apart from the message's wording; ``()`` for any other refusal, and for one from a
    #: worker of an openenv-gym version that did not send them. On the wire and in an HTTP
    #: error body: ``"unknown_arguments": [...]``, present only when not empty.
    unknown_arguments: tuple[str, ...]

    def __init__(self, *args: object, unknown_arguments: Iterable[str] = ()) -> None:
        super().__init__(*args)
        self.unknown_arguments = tuple(unknown_arguments)


class InvalidDataError(OpenEnvError, ValueError):
    """An env's input data (a user CSV/Parquet, a date range, a ticker list) is unusable.

    The message names the file, column, row or argument at fault and how to fix it.

    Example:
        >>> issubclass(InvalidDataError, ValueError), InvalidDataError.http_status
        (True, 422)
    """

    http_status = 422


class ResetNeededError(InvalidRequestError, ResetNeeded):
    """The env needs a ``reset``: it was never reset, or its episode is over.

    Also a :class:`gymnasium.error.ResetNeeded`, which Gymnasium raises for a step before reset.
    Stepping past the end of an episode is refused, as Gymnasium's vector envs refuse it with
    autoreset disabled: a step there would pay rewards outside any episode.

    Example:
        >>> import gymnasium as gym
        >>> issubclass(ResetNeededError, gym.error.ResetNeeded), ResetNeededError.http_status
        (True, 409)
    """

    http_status = 409


class SessionNotFoundError(OpenEnvError, KeyError):
    """The session id is unknown: it was never created, was closed, or expired idle.

    Example:
        >>> err = SessionNotFoundError("no session abc")
        >>> isinstance(err, KeyError), str(err), err.http_status
        (True, 'no session abc', 404)
    """

    http_status = 404

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SessionLimitError(OpenEnvError):
    """The server already hosts its maximum number of sessions; close one or raise the limit.

    Example:
        >>> SessionLimitError.http_status
        429
    """

    http_status = 429


class EnvServerError(OpenEnvError):
    """The environment itself raised an exception inside the worker.

    The message carries the remote exception type and text; the worker keeps serving.

    Example:
        >>> err = error_from_wire({"type": "EnvServerError", "message": "KeyError: 1",
        ...                       "builtin": "KeyError"})
        >>> isinstance(err, EnvServerError), isinstance(err, KeyError)
        (True, True)
    """

    http_status = 500


class ProtocolError(OpenEnvError):
    """A frame on the binary path could not be read: truncated, oversized or not msgpack.

    Example:
        >>> error_from_wire("not a dict")
        ProtocolError("malformed error reply: 'not a dict'")
    """

    http_status = 400


class WorkerError(OpenEnvError, RuntimeError):
    """Base class of failures of the worker process or container itself.

    Example:
        >>> issubclass(WorkerCrashedError, WorkerError), issubclass(WorkerError, RuntimeError)
        (True, True)
    """

    http_status = 503


class WorkerConnectionError(WorkerError, ConnectionError):
    """The worker cannot be reached: it is not running, or its socket refused us.

    Example:
        >>> issubclass(WorkerConnectionError, ConnectionError), WorkerConnectionError.http_status
        (True, 503)
    """


class WorkerTimeoutError(WorkerError, TimeoutError):
    """The worker did not answer within the call's timeout.

    Example:
        >>> issubclass(WorkerTimeoutError, TimeoutError), WorkerTimeoutError.http_status
        (True, 503)
    """


class WorkerCrashedError(WorkerError):
    """The worker died (killed, out of memory) while serving a call.

    Example:
        >>> issubclass(WorkerCrashedError, WorkerError), WorkerCrashedError.http_status
        (True, 503)
    """


class ProviderUnavailableError(OpenEnvError, RuntimeError):
    """A provider cannot run here (no Docker engine, Ray not installed, image missing).

    Example:
        >>> issubclass(ProviderUnavailableError, RuntimeError), ProviderUnavailableError.http_status
        (True, 500)
    """


class UnknownEnvironmentError(OpenEnvError, LookupError):
    """No environment of that name is in the catalog or any ``openenv_gym.envs`` plugin.

    Example:
        >>> issubclass(UnknownEnvironmentError, LookupError), UnknownEnvironmentError.http_status
        (True, 404)
    """

    http_status = 404


_BY_NAME: dict[str, type[OpenEnvError]] = {
    cls.__name__: cls
    for cls in (
        OpenEnvError,
        InvalidActionError,
        InvalidRequestError,
        InvalidDataError,
        ResetNeededError,
        SessionNotFoundError,
        SessionLimitError,
        EnvServerError,
        ProtocolError,
        WorkerError,
        WorkerConnectionError,
        WorkerTimeoutError,
        WorkerCrashedError,
        ProviderUnavailableError,
        UnknownEnvironmentError,
    )
}


#: Built-in exceptions that an :class:`EnvServerError` for an env's own exception is also an
#: instance of, so ``except KeyError`` catches a worker's ``KeyError`` as it would a local
#: one (Gymnasium's ``AsyncVectorEnv`` re-raises a worker's exception type too).
_BUILTINS: tuple[type[Exception], ...] = (
    AttributeError, KeyError, IndexError, LookupError, TypeError, ValueError, NotImplementedError,
    RuntimeError, ZeroDivisionError, ArithmeticError, AssertionError)


def _mixed(base: type[Exception]) -> type[EnvServerError]:
    # Named in this module, so pickle (Ray moves errors between processes) finds it by name.
    name = f"_EnvServer{base.__name__}"
    cls = type(name, (EnvServerError, base), {"__module__": __name__, "__qualname__": name,
                                              "__str__": BaseException.__str__})  # KeyError quotes
    globals()[name] = cls
    return cls


_ENV_ERROR_BY_BUILTIN: dict[str, type[EnvServerError]] = {b.__name__: _mixed(b) for b in _BUILTINS}


def _builtin_of(exc: BaseException) -> str | None:
    """The first of :data:`_BUILTINS` in ``exc``'s class hierarchy (its own class, if built in)."""
    for cls in type(exc).__mro__:
        if cls in _BUILTINS:
            return cls.__name__
    return None


def headline(exc: BaseException) -> str:
    r"""The first line of ``exc``'s message, or its type's name when it has none: what a longer
    message quotes of it, without the worker log lines a :class:`WorkerError` ends with.

    Args:
        exc: The error to quote.

    Returns:
        Its message's first line.

    Example:
        >>> headline(WorkerCrashedError("worker 0 died\nlast worker log lines:\n..."))
        'worker 0 died'
    """
    return next(iter(str(exc).splitlines()), type(exc).__name__)


def env_error(exc: BaseException, context: str = "") -> EnvServerError:
    """An :class:`EnvServerError` for an exception the env itself raised.

    Args:
        exc: The env's exception.
        context: What was being done (``"cannot make env 'gym'"``), put first.

    Returns:
        ``"<context>: KeyError: 'x'"``, also an instance of the built-in exception class
        ``exc`` derives from (``KeyError`` here), where it is a common one.

    Example:
        >>> error = env_error(KeyError("x"), "step")
        >>> isinstance(error, EnvServerError), isinstance(error, KeyError), str(error)
        (True, True, "step: KeyError: 'x'")
    """
    cls = _ENV_ERROR_BY_BUILTIN.get(_builtin_of(exc) or "", EnvServerError)
    text = f"{type(exc).__name__}: {exc}"
    error = cls(f"{context}: {text}" if context else text)
    error.unknown_arguments = tuple(getattr(exc, "unknown_arguments", ()))  # Gym-v0's refusal names them
    return error


def error_to_wire(exc: BaseException) -> dict[str, Any]:
    """Describe ``exc`` as a wire error: our own types keep their name, others become EnvServerError.

    Args:
        exc: The exception raised while serving a request.

    Returns:
        ``{"type": name, "message": text}``, and for an env's own exception ``"builtin"``:
        the built-in exception class it derives from, which the client's error is also an
        instance of (see :func:`env_error`); for a refusal of arguments the env does not take,
        ``"unknown_arguments"``: their names (:attr:`InvalidRequestError.unknown_arguments`);
        for an env's own exception raised where it has a traceback, ``"traceback"``: its text
        from the env's first frame on, which :func:`error_from_wire` adds as a note.

    Example:
        >>> error_to_wire(InvalidActionError("bad"))
        {'type': 'InvalidActionError', 'message': 'bad'}
        >>> error_to_wire(KeyError("x"))
        {'type': 'EnvServerError', 'message': "KeyError: 'x'", 'builtin': 'KeyError'}
        >>> error_to_wire(InvalidRequestError("no x", unknown_arguments=["x"]))
        {'type': 'InvalidRequestError', 'message': 'no x', 'unknown_arguments': ['x']}
    """
    trace = None
    if isinstance(exc, ResetNeeded) and not isinstance(exc, OpenEnvError):
        # Gymnasium's own "call reset first" (OrderEnforcing around a served env) is the caller's.
        exc = ResetNeededError(str(exc))
    elif not isinstance(exc, OpenEnvError):
        trace = _env_traceback(exc)
        exc = env_error(exc)
    # The nearest of our own classes (a plugin's subclass travels as the one it extends).
    name = next(cls.__name__ for cls in type(exc).__mro__ if _BY_NAME.get(cls.__name__) is cls)
    out: dict[str, Any] = {"type": name, "message": str(exc)}
    builtin = _builtin_of(exc) if isinstance(exc, EnvServerError) else None
    if builtin is not None:
        out["builtin"] = builtin
    unknown = getattr(exc, "unknown_arguments", ())
    if unknown:
        out["unknown_arguments"] = list(unknown)
    if trace:
        out["traceback"] = trace
    return out


#: The worker's dispatch, whose frames lead to every env call: left out of an env's traceback.
_SERVER_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server", "")
#: Most characters of an env's traceback sent (its end, where the env's own frames are).
_TRACEBACK_LIMIT = 8000


def _env_traceback(exc: BaseException) -> str | None:
    """The traceback of an env's own exception from the env's first frame on (None: it has
    none, or it arose in the worker's dispatch itself), at most its last
    :data:`_TRACEBACK_LIMIT` characters."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_SERVER_DIR):
        tb = tb.tb_next
    if tb is None:
        return None
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return text if len(text) <= _TRACEBACK_LIMIT else "...\n" + text[-_TRACEBACK_LIMIT:]


def error_from_wire(error: Any) -> OpenEnvError:
    """Rebuild the typed exception a server described with :func:`error_to_wire`.

    Args:
        error: The ``error`` field of a failed reply.

    Returns:
        An instance of the matching :class:`OpenEnvError` subclass.

    Example:
        >>> err = error_from_wire({"type": "EnvServerError", "message": "KeyError: 'x'", "builtin": "KeyError"})
        >>> isinstance(err, EnvServerError), isinstance(err, KeyError)
        (True, True)
    """
    if not isinstance(error, dict):
        return ProtocolError(f"malformed error reply: {error!r}")
    cls = _BY_NAME.get(str(error.get("type")), EnvServerError)
    if cls is EnvServerError:
        cls = _ENV_ERROR_BY_BUILTIN.get(str(error.get("builtin")), EnvServerError)
    out = cls(str(error.get("message", "")))
    unknown = error.get("unknown_arguments")  # absent from an older worker's errors
    if isinstance(unknown, list) and all(isinstance(name, str) for name in unknown):
        out.unknown_arguments = tuple(unknown)
    trace = error.get("traceback")  # an env's own exception: where in its code it arose
    if isinstance(trace, str):
        # A note, not the message: Python prints it under an uncaught error, as a local
        # env's traceback would show, and str(error) stays the one line callers match on.
        out.add_note(f"the env's traceback, in the worker:\n{trace.rstrip()}")
    return out
