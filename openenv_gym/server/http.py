"""The HTTP/JSON front of an env server (FastAPI; OpenAPI docs at ``/docs``).

Sessions make whole episodes drivable from any language::

    curl -s -X POST localhost:8000/reset -H 'content-type: application/json' -d '{}'
    curl -s -X POST localhost:8000/step -H 'content-type: application/json' \\
         -d '{"session_id": "<id>", "action": {"message": "hi"}}'

Every error, the framework's own included (an unknown path, a body that is not JSON or is
too large), answers with its status and an :class:`~openenv_gym.server.http_errors.ErrorBody`
``{"error": {"type": ..., "message": ...}}`` (see :mod:`openenv_gym.server.http_errors`): 4xx for the caller's mistakes (409 for a step
that needs a reset first), 500 for an exception of the env's own. The session and the
connection stay usable. Non-finite floats (a ``-inf`` reward) are written as ``null``.
"""

from __future__ import annotations

import threading
from contextlib import asynccontextmanager
from typing import Annotated, Any, AsyncIterator

import anyio.to_thread
from fastapi import APIRouter, Body, FastAPI, Query, Response
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ConfigDict, Field

from openenv_gym.protocol.wire import MAX_FRAME
from openenv_gym.server import http_errors
from openenv_gym.server.http_errors import ErrorRoute, HeadAsGet, error_responses
from openenv_gym.server.openapi import typed_openapi
from openenv_gym.server.service import EnvService
from openenv_gym.spaces import to_jsonable

__all__ = ["create_app", "SPARE_THREADS"]

#: Worker threads beyond one per session (AnyIO's default pool size): for the calls that
#: are no step (``/state``, ``/sessions``, ``/web``) while every session has one in flight.
SPARE_THREADS = 40


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

    session_id: str = Field(description="The session_id a POST /reset returned; a reset without one starts a session.")
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

#: The bodies /docs offers for ``POST /reset``, the first by default: without them, Swagger UI
#: filled in ``"session_id": "string"``, and its "Try it out" answered 404 "no session 'string'".
_RESET_EXAMPLES: dict[str, dict[str, Any]] = {
    "new": {"summary": "Start a new session", "value": {}},
    "seeded": {"summary": "Start a new session with a seed", "value": {"seed": 0}},
    "again": {"summary": "Start a new episode in a session",
              "value": {"session_id": "<the session_id of an earlier reset>"}},
}

def create_app(service: EnvService, max_body_size: int = MAX_FRAME,
               stopping: threading.Event | None = None) -> FastAPI:
    """Build the FastAPI app serving ``service``.

    Args:
        service: The env service (shared with the binary server of the same process).
        max_body_size: Largest request body read, in bytes (the binary path's frame limit);
            a larger one is refused with 413 before it is read.
        stopping: Set it when the server starts to shut down: open ``/web/events`` streams
            then end at once (uvicorn waits for every open response before it exits).

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

    # FastAPIOffline serves /docs from files in its wheel: FastAPI's own page loads Swagger UI
    # from a CDN, and was blank on a machine without internet. No /redoc: ReDoc still loads
    # its logo from its CDN.
    app = FastAPIOffline(
        redoc_url=None,
        title=f"openenv_gym: {service.env_name}",
        description="Drive episodes of an openenv_gym environment over HTTP/JSON. Every error "
                    "answers with its status and an ErrorBody.",
        version="1",
        lifespan=lifespan,
    )
    http_errors.install(app, max_body_size, _BODIES)
    app.add_middleware(HeadAsGet)  # added last: runs first
    # The limit on the routes, not the app: FastAPI's app-wide one answers a declared length
    # over it in plain text, whatever the handlers say. Here it caps chunked bodies while
    # they arrive; http_errors refuses declared lengths.
    # 403 on every route: LocalOnly refuses a foreign Host before any route runs.
    api = APIRouter(route_class=ErrorRoute, max_body_size=max_body_size,
                    responses=error_responses(403))

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
    def reset(body: Annotated[ResetRequest | None, Body(openapi_examples=_RESET_EXAMPLES)] = None) -> Any:
        """Start an episode; creates a session unless ``session_id`` names one."""
        body = body or ResetRequest()
        out = service.reset(body.session_id, body.seed, body.options)
        # Encoded here, not by FastAPI after the return, so that a reply that cannot be sent
        # (an object JSON has no form for) still lets the service drop the session it made.
        try:
            reply = ResetResponse(session_id=out["sid"], observation=to_jsonable(out["obs"]),
                                  info=to_jsonable(out["info"])).model_dump_json()
        except (ValueError, TypeError):  # pydantic's ValidationError and SerializationError
            service.reset_unsent(body.session_id, out["sid"])
            raise
        return Response(reply, media_type="application/json")

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

    from openenv_gym.server.web import openapi_31, web_router  # the live view at /web

    app.include_router(web_router(service.web, stopping, title=f"openenv_gym: {service.env_name}"))
    openapi_31(app)
    typed_openapi(app, service.spec())
    return app
