"""The HTTP/JSON front of an env server (FastAPI; OpenAPI docs at ``/docs``).

Sessions make whole episodes drivable from any language::

    curl -s -X POST localhost:8000/reset -H 'content-type: application/json' -d '{}'
    curl -s -X POST localhost:8000/step -H 'content-type: application/json' \\
         -d '{"session_id": "<id>", "action": {"message": "hi"}}'

Errors answer with a 4xx (or 500 for a bug inside the env) and a body
``{"error": {"type": ..., "message": ...}}``; the session stays usable.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from openenv_gym.errors import OpenEnvError, error_to_wire
from openenv_gym.server.service import EnvService
from openenv_gym.spaces import to_jsonable

__all__ = ["create_app"]


class ResetRequest(BaseModel):
    """Body of ``POST /reset``."""

    session_id: str | None = Field(None, description="Reset this session; omit to create one.")
    seed: int | None = Field(None, ge=0, description="Seed for the env's random generator.")
    options: dict[str, Any] | None = Field(None, description="Env-specific reset options.")


class StepRequest(BaseModel):
    """Body of ``POST /step``."""

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
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


def _error_response(exc: Exception, status: int | None = None) -> JSONResponse:
    code = status or (exc.http_status if isinstance(exc, OpenEnvError) else 500)
    return JSONResponse({"error": error_to_wire(exc)}, status_code=code)


def create_app(service: EnvService) -> FastAPI:
    """Build the FastAPI app serving ``service``.

    Args:
        service: The env service (shared with the binary server of the same process).

    Returns:
        The app; run it with uvicorn on 127.0.0.1.
    """
    app = FastAPI(
        title=f"openenv_gym: {service.env_name}",
        description="Drive episodes of an openenv_gym environment over HTTP/JSON.",
        version="1",
    )

    @app.exception_handler(OpenEnvError)
    async def _openenv_error(_: Request, exc: OpenEnvError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return JSONResponse(
            {"error": {"type": "InvalidRequestError", "message": problems}}, status_code=422
        )

    @app.exception_handler(Exception)
    async def _env_bug(_: Request, exc: Exception) -> JSONResponse:
        return _error_response(exc, 500)

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness, load and the addresses this server answers on."""
        return service.health()

    @app.get("/spec")
    def spec() -> dict[str, Any]:
        """Spaces, metadata and JSON schemas of the env."""
        return service.spec()

    @app.post("/reset", response_model=ResetResponse)
    def reset(body: ResetRequest | None = None) -> dict[str, Any]:
        """Start an episode; creates a session unless ``session_id`` names one."""
        body = body or ResetRequest()
        out = service.reset(body.session_id, body.seed, body.options)
        return {"session_id": out["sid"], "observation": to_jsonable(out["obs"]),
                "info": to_jsonable(out["info"])}

    @app.post("/step", response_model=StepResponse)
    def step(body: StepRequest) -> dict[str, Any]:
        """Take one step in a session."""
        out = service.step(body.session_id, body.action)
        return {"observation": to_jsonable(out["obs"]), "reward": out["reward"],
                "terminated": out["terminated"], "truncated": out["truncated"],
                "info": to_jsonable(out["info"])}

    @app.get("/state")
    def state(session_id: str = Query(description="The session.")) -> dict[str, Any]:
        """The session's state: episode id, step count, return and env-specific fields."""
        return to_jsonable(service.state(session_id))

    @app.get("/sessions")
    def sessions() -> list[dict[str, Any]]:
        """The live sessions."""
        return [{"session_id": s.id, "episode": s.episode, "step_count": s.step_count,
                 "episode_return": s.episode_return} for s in service.sessions.sessions()]

    @app.delete("/sessions/{session_id}")
    def close(session_id: str) -> dict[str, Any]:
        """Close a session and free its env."""
        return service.close(session_id)

    from openenv_gym.server.web import web_router  # the live view at /web

    app.include_router(web_router(service.web, title=f"openenv_gym: {service.env_name}"))
    return app
