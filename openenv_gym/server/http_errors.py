"""How the HTTP front answers errors: one :class:`ErrorBody` shape for every status, ours and
the framework's, declared in the OpenAPI document.

An env's own exception is an ordinary 500 reply (:class:`ErrorRoute`), not one Starlette
answers and re-raises, which would close the client's keep-alive connection. Bodies are read
as standard JSON (no ``NaN``), a large one in a worker thread, and one over the size limit
is refused before it is read.

Example:
    >>> from fastapi import FastAPI
    >>> app = FastAPI()
    >>> install(app, max_body_size=1 << 20, bodies={})
    >>> sorted(error_responses(404, 500))
    [404, 500]
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import socket
import sys
from typing import Any, Callable, Coroutine, NamedTuple

import anyio.to_thread
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openenv_gym._text import cut, short_repr
from openenv_gym.errors import OpenEnvError, error_from_wire, error_to_wire
from openenv_gym.protocol.wire import MAX_FRAME

__all__ = ["ErrorBody", "ErrorDetail", "ErrorRoute", "HeadAsGet", "LocalOnly", "error_responses", "install"]

logger = logging.getLogger("openenv_gym.http")


class ErrorDetail(BaseModel):
    """What went wrong."""

    type: str = Field(description="The openenv_gym error class: InvalidRequestError, "
                                  "InvalidActionError, ResetNeededError, SessionNotFoundError, "
                                  "SessionLimitError, EnvServerError, ...",
                      examples=["InvalidActionError"])
    message: str = Field(description="What went wrong and how to fix it.")
    builtin: str | None = Field(None, description="EnvServerError only: the built-in exception "
                                                  "class the env raised (ValueError, KeyError, ...).")
    unknown_arguments: list[str] | None = Field(
        None, description="When present: the keyword arguments the env refused because it takes none "
                          "of those names (an InvalidRequestError; a Gym-v0 env's TypeError, an "
                          "EnvServerError).")


class ErrorBody(BaseModel):
    """The body of every error reply."""

    error: ErrorDetail


class _Status(NamedTuple):
    """What an error status means on this API, as /docs shows it."""

    description: str
    #: The error class its example names: /docs showed InvalidActionError (the field's one
    #: example) under every status, a 404 and a 500 included.
    example_type: str


#: Each error status of this API: its OpenAPI description and its example's error class, in
#: one table so the two cannot drift apart.
_ERRORS: dict[int, _Status] = {
    400: _Status("A request the env refuses: a seed or options it cannot use (InvalidRequestError).",
                 "InvalidRequestError"),
    403: _Status("A browser request from another site (its Origin is not this server), or one "
                 "that reached this server over loopback under a name that is not local (DNS "
                 "rebinding).", "InvalidRequestError"),
    404: _Status("No such session: never created, closed, or expired idle (SessionNotFoundError); "
                 "or no such path.", "SessionNotFoundError"),
    405: _Status("The path does not take this method.", "InvalidRequestError"),
    409: _Status("The session needs a reset: it was never reset, or its episode ended "
                 "(ResetNeededError).", "ResetNeededError"),
    413: _Status(f"The body is larger than the server's limit ({MAX_FRAME >> 20} MiB unless it was "
                 "made with another); nothing of it is read.", "InvalidRequestError"),
    415: _Status("The body was not sent as Content-Type: application/json, or was sent compressed "
                 "(a Content-Encoding other than identity).", "InvalidRequestError"),
    422: _Status("The body is not valid JSON (NaN and Infinity included), or it or the query does "
                 "not fit the schema: a missing or unknown field, a wrong type "
                 "(InvalidRequestError); or the action does not fit the action space "
                 "(InvalidActionError).", "InvalidActionError"),
    429: _Status("The server hosts its maximum number of sessions (SessionLimitError).",
                 "SessionLimitError"),
    500: _Status("The env itself raised an exception (EnvServerError); the session stays usable.",
                 "EnvServerError"),
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route for the error statuses it can answer with.

    Args:
        codes: HTTP statuses, among those of :data:`_ERRORS`.

    Returns:
        ``{status: {"model": ErrorBody, "description": ...}}``; naming 422 here also keeps
        FastAPI from documenting its own validation error shape, which this app never sends.
    """
    # The schema named too: FastAPI derives it from "model" only on routes with a response
    # model of their own, so /web's and /web/events' 403 had an example and no schema.
    return {code: {"model": ErrorBody, "description": _ERRORS[code].description,
                   "content": {"application/json": {
                       "schema": {"$ref": "#/components/schemas/ErrorBody"},
                       "example": {"error": {"type": _ERRORS[code].example_type,
                                             "message": _ERRORS[code].description}}}}}
            for code in codes}


def _error_response(exc: BaseException, headers: dict[str, str] | None = None) -> JSONResponse:
    wire = error_to_wire(exc)
    wire.pop("traceback", None)  # the HTTP front logs it (openenv_gym.http); its body stays as documented
    # The status of the class the reply names (Gymnasium's ResetNeeded travels as ours: 409).
    code = exc.http_status if isinstance(exc, OpenEnvError) else error_from_wire(wire).http_status
    return JSONResponse({"error": wire}, status_code=code, headers=headers)


def _invalid(message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": "InvalidRequestError", "message": message}},
                        status_code=status, headers=headers)


class _Unreadable(ValueError):
    """A number the server will not read; the message says why and what to send."""


def _refuse_constant(name: str) -> Any:
    raise _Unreadable(f"{name} is not a JSON number; send a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e309: valid JSON, beyond a double, read as inf
        raise _Unreadable(f"{text} is beyond a 64-bit float's range (it would be read as "
                          "infinity); send a finite number")
    return value


#: Bodies up to this size are parsed on the event loop; larger ones in a worker thread: a
#: 60 MB body of floats took ~10 s, and held up every other request, ``/health`` included.
#: (The thread lets the loop run at each float's :func:`_finite_float` call; the C reader
#: holds the GIL in between, so a single huge string still holds the loop for its scan.)
_PARSE_INLINE = 1 << 20


class _JSONRequest(Request):
    """A request whose body must be standard JSON of finite numbers: Python's ``json`` also
    reads ``NaN`` and ``Infinity`` (and ``1e309`` as infinity), which would reach an env as
    numbers no field's bounds catch clearly (a Coding timeout of NaN "should be <= 3600")."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            # A thread's round trip costs more than parsing a small body (every step's).
            if len(body) > _PARSE_INLINE:
                self._json = await anyio.to_thread.run_sync(_parse, body)
            else:
                self._json = _parse(body)
        return self._json


def _parse(body: bytes) -> Any:
    """``body`` read as standard JSON; any reason it cannot be is a :class:`json.JSONDecodeError`."""
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError:
        raise  # FastAPI names the position
    except (ValueError, RecursionError) as exc:
        # As FastAPI reports a JSON syntax error (422), not as a body it could not
        # read (400, no reason). Position -1: none, as json names none for these.
        if isinstance(exc, RecursionError):  # Python's reader nests ~1000 deep at most
            reason = ("it nests arrays or objects too deeply for the server's JSON "
                      "reader (about 1000 levels); send a flatter body")
        elif isinstance(exc, UnicodeDecodeError):
            reason = f"it is not UTF-8 text ({exc.reason} at byte {exc.start})"
        elif isinstance(exc, _Unreadable):
            reason = str(exc)
        else:  # int(): Python reads integers of up to sys.get_int_max_str_digits() digits
            reason = (f"it holds an integer longer than the server reads "
                      f"({sys.get_int_max_str_digits()} digits at most); send a shorter one")
        raise json.JSONDecodeError(reason, body.decode("utf-8", "replace"), -1) from None


class ErrorRoute(APIRoute):
    """A route whose env's own exceptions become 500 error replies, logged once.

    FastAPI hands an exception no handler claims to Starlette's ``ServerErrorMiddleware``,
    which answers it but then re-raises it, so uvicorn logs "Exception in ASGI application"
    and closes the client's keep-alive connection. Answered here, the reply is an ordinary
    one. Bodies are read as standard JSON (:class:`_JSONRequest`).
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(_JSONRequest(request.scope, request.receive))
            except (OpenEnvError, HTTPException, RequestValidationError):
                raise  # the app's handlers answer these
            except Exception as exc:
                response = _error_response(exc)
                if response.status_code >= 500:
                    logger.error("%s %s: the env raised %s: %s; answered %d", request.method,
                                 request.url.path, type(exc).__name__, exc, response.status_code,
                                 exc_info=exc)
                return response

        return handle


def _describe(error: dict[str, Any], path: str, bodies: dict[str, type[BaseModel]]) -> str:
    """A validation problem as a sentence that says what to fix."""
    where, *field = error["loc"]
    name = ".".join(map(str, field))
    kind = error["type"]
    if kind == "json_invalid":
        ctx = error.get("ctx", {}).get("error", "")
        position = field[0] if field and isinstance(field[0], int) else -1
        doc = error.get("body")
        if position >= 0 and isinstance(doc, str):
            ctx = str(json.JSONDecodeError(ctx, doc, position))  # "...: line 1 column 9 (char 8)"
        return f"the body is not valid JSON: {ctx}"
    if kind == "extra_forbidden":
        model = bodies.get(path)
        known = f"; {path} takes {', '.join(model.model_fields)}" if model else ""
        return f"unknown field {short_repr(name)} in the body{known}"  # a key may be megabytes
    if where == "body" and not field and kind == "missing":
        return "the request needs a JSON body"
    if where == "query":
        return f"query parameter {name!r}: {error['msg']}"
    if where == "body" and kind == "missing" and len(field) == 1:
        # Said with what the field is: a bare "session_id: Field required" left a caller used to
        # a stateless /step (OpenEnv's) guessing where a session comes from.
        info = getattr(bodies.get(path), "model_fields", {}).get(name)
        about = (info.description or "").rstrip(". ") if info is not None else ""
        if about:
            return f"{name}: {error['msg']} ({about[0].lower()}{about[1:]})"
    if where == "body":
        got = json.dumps(error.get("input"), default=repr)  # as the caller wrote it: true, not True
        shown = f", got {got}" if name and kind != "missing" and len(got) <= 80 else ""
        return f"{name or 'body'}: {error['msg']}{shown}"
    return f"{where} {name}: {error['msg']}"


def _not_json(request: Request, exc: RequestValidationError) -> bool:
    # FastAPI hands the raw bytes to the model when the body was not sent as JSON.
    return any(e["loc"] == ("body",) and isinstance(e.get("input"), bytes) for e in exc.errors())


def _too_large(limit: int) -> str:
    # The binary path's frame limit too: no front takes a larger message.
    return f"the request body is larger than the limit of {limit} bytes ({limit / 2**20:g} MiB)"


class _RefuseUnread:
    """Refuses, before reading any of it, a body that declares a length over the limit (413)
    or a content coding the server does not decode (415), with an :class:`ErrorBody` (a pure
    ASGI middleware: nothing of the request is read)."""

    def __init__(self, app: ASGIApp, max_body_size: int) -> None:
        self.app = app
        self.max_body_size = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            length = headers.get("content-length", "")
            coding = headers.get("content-encoding", "identity").strip().lower()
            if length.isdigit() and int(length) > self.max_body_size:
                response = _invalid(_too_large(self.max_body_size), 413)
                await response(scope, receive, send)
                return
            if coding not in ("", "identity"):
                # Else a gzip body (some clients compress theirs) was read as JSON text and
                # refused as "not UTF-8", which named neither the cause nor the fix.
                # Accept-Encoding names the codings taken (RFC 9110 §12.5.3).
                response = _invalid(f"the body is sent with Content-Encoding: {coding[:40]}, which "
                                    "this server does not decode; send it uncompressed", 415,
                                    {"Accept-Encoding": "identity"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _name_of(host: str) -> str:
    """The host name of a ``Host`` header or an origin's ``netloc``, without the port."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8000
        return host[1:host.find("]")] if "]" in host else host
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name.rstrip(".")  # "localhost." is the same name, fully qualified


def _is_local_name(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):  # browsers resolve these themselves
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        # The machine's own name (Debian maps it to 127.0.1.1): no attacker's DNS answers a
        # browser's request for it. Not getfqdn(): a DNS lookup per refused request.
        return name == _HOSTNAME


_HOSTNAME = socket.gethostname().lower()


#: GET routes that stream (Server-Sent Events): a HEAD of them would wait out the stream, so
#: they keep FastAPI's 405 for HEAD on purpose.
_STREAMS = frozenset({"/web/events"})


class HeadAsGet:
    """Answer ``HEAD`` as ``GET`` without the body, as HTTP asks of every server (RFC 9110
    §9.3.2) and Starlette's own routes do: FastAPI's take only the methods they declare
    (fastapi#1773), so ``curl -I /health`` and monitors that probe with HEAD got 405."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or scope["path"] in _STREAMS:
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}  # the headers (Content-Length) stay GET's
            await send(message)

        # A copy: the server reads the method from its own scope to send no body either.
        await self.app({**scope, "method": "GET"}, receive, headers_only)


class LocalOnly:
    """Keeps web pages of other sites away from a server that runs code for its caller.

    The servers listen on 127.0.0.1 without authentication, which keeps other machines out,
    but not the pages the user's browser shows: those can send requests to 127.0.0.1 too.

    * A request that arrives over loopback must name a local host (``localhost``,
      ``127.0.0.1``, ``[::1]``, this machine's name) in its ``Host`` header: under DNS
      rebinding a page of ``attacker.example`` reaches 127.0.0.1 under its own name, and
      would otherwise read and drive every session (a Coding step runs its code).
    * A request that changes something (any method but GET, HEAD, OPTIONS) and carries an
      ``Origin`` header (browsers send it; curl and the Python client do not) must come from
      this server's own origin: a cross-site form or ``fetch(..., {mode: "no-cors"})`` with
      no body is a "simple" request, sent without a preflight, and would create sessions.

    Refused requests get 403 and an :class:`ErrorBody`; nothing of them reaches a route.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self.problem(scope)
            if problem:
                logger.warning("refused %s %s: %s", scope.get("method"), scope.get("path"), problem)
                await _invalid(problem, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def problem(scope: Scope) -> str | None:
        """Why the request is refused, or None."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        server = scope.get("server") or (None, None)
        try:
            over_loopback = ipaddress.ip_address(str(server[0])).is_loopback
        except ValueError:  # a Unix socket, or a test client
            over_loopback = False
        if over_loopback and not host:  # an HTTP/1.0 client's habit: no name to judge
            return ("the request has no Host header; send one naming this server (Host: "
                    "127.0.0.1:PORT or localhost:PORT), as every HTTP/1.1 client does")
        if over_loopback and not _is_local_name(_name_of(host)):
            return (f"this server answers local names only (Host: {host}); use "
                    "http://127.0.0.1:PORT or http://localhost:PORT")
        origin = headers.get("origin")
        if origin is not None and scope.get("method") not in ("GET", "HEAD", "OPTIONS"):
            netloc = origin.split("://", 1)[1] if "://" in origin else None
            if netloc is None or netloc.strip("/").lower() != host.lower():
                return (f"a request from the web page of another site ({origin}) may not change "
                        "this server's sessions; send it without an Origin header, or from this "
                        "server's own pages")
        return None


def install(app: FastAPI, max_body_size: int, bodies: dict[str, type[BaseModel]]) -> None:
    """Make every error ``app`` answers an :class:`ErrorBody` with its status.

    Args:
        app: The app; its routes should use :class:`ErrorRoute`.
        max_body_size: Largest request body, in bytes: a larger declared length gets 413
            before any of it is read.
        bodies: The body model of each path that takes one, to name the fields it knows
            when a body has an unknown one.
    """
    app.add_middleware(_RefuseUnread, max_body_size=max_body_size)
    app.add_middleware(LocalOnly)  # added last: runs first

    @app.exception_handler(OpenEnvError)
    async def _openenv_error(_: Request, exc: OpenEnvError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        if _not_json(request, exc):
            sent = request.headers.get("content-type") or "none"
            return _invalid(f"send the body as JSON with the header Content-Type: application/json "
                            f"(this request's Content-Type: {sent})", 415)
        path = request.url.path
        errors = [dict(e, body=exc.body) for e in exc.errors()]
        return _invalid("; ".join(_describe(e, path, bodies) for e in errors), 422)

    @app.exception_handler(HTTPException)
    async def _framework_error(request: Request, exc: HTTPException) -> JSONResponse:
        # Starlette's own refusals (unknown path, wrong method, body too large or unreadable)
        # in the same shape as ours.
        path = request.url.path
        path = cut(path)  # a path may be ~100 KB long
        where = f"{request.method} {path}"
        headers = dict(exc.headers or {})
        allow = next((v for k, v in headers.items() if k.lower() == "allow"), "other methods")
        if exc.status_code == 405:
            methods = {m.strip() for m in allow.split(",")}
            if "GET" in methods and request.url.path not in _STREAMS:
                # HeadAsGet answers HEAD wherever GET is, and a 405's Allow lists every method
                # the path takes (RFC 9110 §15.5.6): FastAPI's routes named GET alone.
                methods.add("HEAD")
            allow = ", ".join(sorted(methods))  # Starlette's own routes list a set's order
            headers = {k: v for k, v in headers.items() if k.lower() != "allow"} | {"Allow": allow}
        messages = {
            404: f"no such path: {where}; the API is described at /docs",
            405: f"{where} is not allowed; {path} takes {allow}",
            413: _too_large(max_body_size),
        }
        return _invalid(messages.get(exc.status_code, f"{where}: {exc.detail}"), exc.status_code,
                        headers or None)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # Only for an error outside every route (routes answer their own: ErrorRoute); the
        # connection then closes, as Starlette re-raises after this reply.
        return _error_response(exc)
