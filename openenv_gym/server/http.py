"""The HTTP/JSON front of an env server (FastAPI; OpenAPI docs at ``/docs``).

Sessions make whole episodes drivable from any language::

    curl -s -X POST localhost:8000/reset -H 'content-type: application/json' -d '{}'
    curl -s -X POST localhost:8000/step -H 'content-type: application/json' \\
         -d '{"session_id": "<id>", "action": {"message": "hi"}}'

Every error, the framework's own included (an unknown path, a body that is not JSON or is
too large), answers with its status and an :class:`ErrorBody`
``{"error": {"type": ..., "message": ...}}``: 4xx for the caller's mistakes (409 for a step
that needs a reset first), 500 for an exception of the env's own. The session and the
connection stay usable. Non-finite floats (a ``-inf`` reward) are written as ``null``.
"""

from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Coroutine

import anyio.to_thread
from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from openenv_gym.errors import OpenEnvError, error_from_wire, error_to_wire
from openenv_gym.protocol.wire import MAX_FRAME
from openenv_gym.server.service import EnvService
from openenv_gym.spaces import to_jsonable

__all__ = ["create_app", "ErrorBody", "ErrorRoute", "error_responses", "SPARE_THREADS"]

logger = logging.getLogger("openenv_gym.http")

#: Worker threads beyond one per session (AnyIO's default pool size): for the calls that
#: are no step (``/state``, ``/sessions``, ``/web``) while every session has one in flight.
SPARE_THREADS = 40


class ErrorDetail(BaseModel):
    """What went wrong."""

    type: str = Field(description="The openenv_gym error class: InvalidRequestError, "
                                  "InvalidActionError, ResetNeededError, SessionNotFoundError, "
                                  "SessionLimitError, EnvServerError, ...",
                      examples=["InvalidActionError"])
    message: str = Field(description="What went wrong and how to fix it.")
    builtin: str | None = Field(None, description="EnvServerError only: the built-in exception "
                                                  "class the env raised (ValueError, KeyError, ...).")


class ErrorBody(BaseModel):
    """The body of every error reply."""

    error: ErrorDetail


#: What each error status means on this API (the OpenAPI descriptions).
_ERRORS: dict[int, str] = {
    400: "A malformed request: a body that is not valid JSON, or a seed or options the env "
         "refuses (InvalidRequestError).",
    404: "No such session: never created, closed, or expired idle (SessionNotFoundError); or "
         "no such path.",
    405: "The path does not take this method.",
    409: "The session needs a reset: it was never reset, or its episode ended "
         "(ResetNeededError).",
    413: f"The body is larger than the {MAX_FRAME >> 20} MiB limit; nothing of it is read.",
    415: "The body was not sent as Content-Type: application/json.",
    422: "The body or query does not fit the schema: a missing or unknown field, a wrong type "
         "(InvalidRequestError); or the action does not fit the action space "
         "(InvalidActionError).",
    429: "The server hosts its maximum number of sessions (SessionLimitError).",
    500: "The env itself raised an exception (EnvServerError); the session stays usable.",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route for the error statuses it can answer with.

    Args:
        codes: HTTP statuses, among those of :data:`_ERRORS`.

    Returns:
        ``{status: {"model": ErrorBody, "description": ...}}``; naming 422 here also keeps
        FastAPI from documenting its own validation error shape, which this app never sends.
    """
    return {code: {"model": ErrorBody, "description": _ERRORS[code]} for code in codes}


class ResetRequest(BaseModel):
    """Body of ``POST /reset``."""

    model_config = ConfigDict(extra="forbid")  # a typo ("sed") must not pass for "no seed"

    session_id: str | None = Field(None, description="Reset this session; omit to create one.")
    # Strict: JSON's true is no seed, as the binary path decides too.
    seed: int | None = Field(None, ge=0, strict=True, description="Seed for the env's random generator.")
    options: dict[str, Any] | None = Field(None, description="Env-specific reset options.")


class StepRequest(BaseModel):
    """Body of ``POST /step``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(description="The session returned by /reset.")
    action: Any = Field(description="The action, shaped as GET /spec's action_space / action_schema.")


class ResetResponse(BaseModel):
    """Reply of ``POST /reset``."""

    session_id: str
    observation: Any
    info: dict[str, Any]


class StepResponse(BaseModel):
    """Reply of ``POST /step``."""

    observation: Any
    reward: float | None = Field(description="The reward; null when not finite.")
    terminated: bool
    truncated: bool
    info: dict[str, Any]


#: The body model of each route that takes one, to name the fields it knows.
_BODIES: dict[str, type[BaseModel]] = {"/reset": ResetRequest, "/step": StepRequest}


def _error_response(exc: BaseException, headers: dict[str, str] | None = None) -> JSONResponse:
    wire = error_to_wire(exc)
    # The status of the class the reply names (Gymnasium's ResetNeeded travels as ours: 409).
    code = exc.http_status if isinstance(exc, OpenEnvError) else error_from_wire(wire).http_status
    return JSONResponse({"error": wire}, status_code=code, headers=headers)


def _invalid(message: str, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": "InvalidRequestError", "message": message}},
                        status_code=status, headers=headers)


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


class _JSONRequest(Request):
    """A request whose body must be standard JSON: Python's ``json`` also reads ``NaN`` and
    ``Infinity``, which would reach an env as numbers no field's bounds catch clearly (a
    Coding timeout of NaN "should be <= 3600")."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = json.loads(body, parse_constant=_refuse_constant)
            except (_NonFinite, UnicodeDecodeError) as exc:
                # As FastAPI reports a JSON syntax error (422), not as a body it could not
                # read (400, no reason). Position -1: none, as json names none for these.
                reason = (f"it is not UTF-8 text ({exc.reason} at byte {exc.start})"
                          if isinstance(exc, UnicodeDecodeError)
                          else f"{exc} is not a JSON number; send a finite number")
                raise json.JSONDecodeError(reason, body.decode("utf-8", "replace"), -1) from None
        return self._json


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


def _describe(error: dict[str, Any], path: str) -> str:
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
        model = _BODIES.get(path)
        known = f"; {path} takes {', '.join(model.model_fields)}" if model else ""
        return f"unknown field {name!r} in the body{known}"
    if where == "body" and not field and kind == "missing":
        return "the request needs a JSON body"
    if where == "query":
        return f"query parameter {name!r}: {error['msg']}"
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


class _LengthLimit:
    """Refuses a body that declares a length over the limit, before reading any of it, with
    a 413 :class:`ErrorBody` (a pure ASGI middleware: nothing of the request is read)."""

    def __init__(self, app: ASGIApp, max_body_size: int) -> None:
        self.app = app
        self.max_body_size = max_body_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = Headers(scope=scope).get("content-length", "")
            if length.isdigit() and int(length) > self.max_body_size:
                response = _invalid(_too_large(self.max_body_size), 413)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(service: EnvService, max_body_size: int = MAX_FRAME) -> FastAPI:
    """Build the FastAPI app serving ``service``.

    Args:
        service: The env service (shared with the binary server of the same process).
        max_body_size: Largest request body read, in bytes (the binary path's frame limit);
            a larger one is refused with 413 before it is read.

    Returns:
        The app; run it with uvicorn on 127.0.0.1.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Sync routes run on AnyIO's thread pool (40 threads by default): one slow call per
        # session must not queue every other request behind 40 Coding steps.
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = max(limiter.total_tokens, service.sessions.max_sessions + SPARE_THREADS)
        yield

    app = FastAPI(
        title=f"openenv_gym: {service.env_name}",
        description="Drive episodes of an openenv_gym environment over HTTP/JSON. Every error "
                    "answers with its status and an ErrorBody.",
        version="1",
        lifespan=lifespan,
    )
    app.add_middleware(_LengthLimit, max_body_size=max_body_size)
    # The limit on the routes, not the app: FastAPI's app-wide one answers a declared length
    # over it in plain text, whatever the handlers say. Here it caps chunked bodies while
    # they arrive; _LengthLimit refuses declared lengths.
    api = APIRouter(route_class=ErrorRoute, max_body_size=max_body_size)

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
        return _invalid("; ".join(_describe(e, path) for e in errors), 422)

    @app.exception_handler(HTTPException)
    async def _framework_error(request: Request, exc: HTTPException) -> JSONResponse:
        # Starlette's own refusals (unknown path, wrong method, body too large or unreadable)
        # in the same shape as ours.
        where = f"{request.method} {request.url.path}"
        allow = next((v for k, v in (exc.headers or {}).items() if k.lower() == "allow"), "other methods")
        messages = {
            404: f"no such path: {where}; the API is described at /docs",
            405: f"{where} is not allowed; {request.url.path} takes {allow}",
            413: _too_large(max_body_size),
        }
        return _invalid(messages.get(exc.status_code, f"{where}: {exc.detail}"), exc.status_code,
                        exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # Only for an error outside every route (routes answer their own: ErrorRoute); the
        # connection then closes, as Starlette re-raises after this reply.
        return _error_response(exc)

    # Async: answered on the event loop, never queued behind steps for a thread.
    @api.get("/health")
    async def health() -> dict[str, Any]:
        """Liveness, load and the addresses this server answers on."""
        return service.health()

    @api.get("/spec")
    async def spec() -> dict[str, Any]:
        """Spaces, metadata and JSON schemas of the env."""
        return service.spec()

    @api.post("/reset", response_model=ResetResponse,
              responses=error_responses(400, 404, 413, 415, 422, 429, 500))
    def reset(body: ResetRequest | None = None) -> dict[str, Any]:
        """Start an episode; creates a session unless ``session_id`` names one."""
        body = body or ResetRequest()
        out = service.reset(body.session_id, body.seed, body.options)
        return {"session_id": out["sid"], "observation": to_jsonable(out["obs"]),
                "info": to_jsonable(out["info"])}

    @api.post("/step", response_model=StepResponse,
              responses=error_responses(400, 404, 409, 413, 415, 422, 500))
    def step(body: StepRequest) -> dict[str, Any]:
        """Take one step in a session; after the episode ends (terminated or truncated), 409
        until the session is reset."""
        out = service.step(body.session_id, body.action)
        return {"observation": to_jsonable(out["obs"]), "reward": out["reward"],
                "terminated": out["terminated"], "truncated": out["truncated"],
                "info": to_jsonable(out["info"])}

    @api.get("/state", responses=error_responses(404, 422, 500))
    def state(session_id: str = Query(description="The session.")) -> dict[str, Any]:
        """The session's state: episode id, step count, return and env-specific fields."""
        return to_jsonable(service.state(session_id))

    @api.get("/sessions")
    def sessions() -> list[dict[str, Any]]:
        """The live sessions."""
        out = []
        for s in service.sessions.sessions():
            with s.book:  # never waits for a step in flight
                out.append({"session_id": s.id, "episode": s.episode, "step_count": s.step_count,
                            "episode_return": s.episode_return})
        return out

    @api.delete("/sessions/{session_id}", responses=error_responses(404, 422))
    def close(session_id: str) -> dict[str, Any]:
        """Close a session and free its env (once a call in flight on it ends)."""
        return service.close(session_id)

    app.include_router(api)

    from openenv_gym.server.web import web_router  # the live view at /web

    app.include_router(web_router(service.web, title=f"openenv_gym: {service.env_name}"))
    return app
