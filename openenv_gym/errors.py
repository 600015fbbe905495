"""Typed errors raised by openenv_gym.

Every failure that can reach a user is one of these classes. Errors raised inside a
worker travel over the wire as ``{"type": <name>, "message": <text>}`` and are rebuilt on
the client by :func:`error_from_wire`, so ``except InvalidActionError`` works the same
whether the action was rejected locally or by a server in a container.

Example:
    >>> from openenv_gym.errors import InvalidActionError, error_from_wire
    >>> err = error_from_wire({"type": "InvalidActionError", "message": "bad"})
    >>> isinstance(err, InvalidActionError), str(err)
    (True, 'bad')
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "OpenEnvError",
    "InvalidActionError",
    "InvalidRequestError",
    "InvalidDataError",
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
    "error_from_wire",
    "error_to_wire",
]


class OpenEnvError(Exception):
    """Base class of every error openenv_gym raises.

    Args:
        message: What went wrong and, where possible, how to fix it.
    """

    #: HTTP status the server answers with when this error ends a request.
    http_status: int = 500


class InvalidActionError(OpenEnvError, ValueError):
    """The action does not fit the env's action space or action model.

    The session is untouched: fix the action and call ``step`` again.
    """

    http_status = 422


class InvalidRequestError(OpenEnvError, ValueError):
    """A request is malformed: unknown operation, missing field, wrong type, too large."""

    http_status = 400


class InvalidDataError(OpenEnvError, ValueError):
    """An env's input data (a user CSV/Parquet, a date range, a ticker list) is unusable.

    The message names the file, column, row or argument at fault and how to fix it.
    """

    http_status = 422


class SessionNotFoundError(OpenEnvError, KeyError):
    """The session id is unknown: it was never created, was closed, or expired idle."""

    http_status = 404

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SessionLimitError(OpenEnvError):
    """The server already hosts its maximum number of sessions; close one or raise the limit."""

    http_status = 429


class EnvServerError(OpenEnvError):
    """The environment itself raised an exception inside the worker.

    The message carries the remote exception type and text; the worker keeps serving.
    """

    http_status = 500


class ProtocolError(OpenEnvError):
    """A frame on the binary path could not be read: truncated, oversized or not msgpack."""

    http_status = 400


class WorkerError(OpenEnvError, RuntimeError):
    """Base class of failures of the worker process or container itself."""

    http_status = 503


class WorkerConnectionError(WorkerError, ConnectionError):
    """The worker cannot be reached: it is not running, or its socket refused us."""


class WorkerTimeoutError(WorkerError, TimeoutError):
    """The worker did not answer within the call's timeout."""


class WorkerCrashedError(WorkerError):
    """The worker died (killed, out of memory) while serving a call."""


class ProviderUnavailableError(OpenEnvError, RuntimeError):
    """A provider cannot run here (no Docker engine, Ray not installed, image missing)."""


class UnknownEnvironmentError(OpenEnvError, LookupError):
    """No environment of that name is in the catalog or any ``openenv_gym.envs`` plugin."""

    http_status = 404


_BY_NAME: dict[str, type[OpenEnvError]] = {
    cls.__name__: cls
    for cls in (
        OpenEnvError,
        InvalidActionError,
        InvalidRequestError,
        InvalidDataError,
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


def error_to_wire(exc: BaseException) -> dict[str, Any]:
    """Describe ``exc`` as a wire error: our own types keep their name, others become EnvServerError.

    Args:
        exc: The exception raised while serving a request.

    Returns:
        ``{"type": name, "message": text}``.
    """
    if isinstance(exc, OpenEnvError):
        return {"type": type(exc).__name__, "message": str(exc)}
    return {"type": "EnvServerError", "message": f"{type(exc).__name__}: {exc}"}


def error_from_wire(error: Any) -> OpenEnvError:
    """Rebuild the typed exception a server described with :func:`error_to_wire`.

    Args:
        error: The ``error`` field of a failed reply.

    Returns:
        An instance of the matching :class:`OpenEnvError` subclass.
    """
    if not isinstance(error, dict):
        return ProtocolError(f"malformed error reply: {error!r}")
    cls = _BY_NAME.get(str(error.get("type")), EnvServerError)
    return cls(str(error.get("message", "")))
