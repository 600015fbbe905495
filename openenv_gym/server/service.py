"""The env service: every operation a server offers, shared by its binary and HTTP fronts.

:meth:`EnvService.handle` serves one decoded binary request (``{"op": ..., ...}``) and
never raises: errors come back as ``{"ok": False, "error": {...}}`` and the session stays
usable. The HTTP app calls the same typed methods.

Example:
    >>> from openenv_gym.envs.echo.env import EchoEnv
    >>> service = EnvService(EchoEnv, env_name="echo")
    >>> sid = service.handle({"op": "reset"})["sid"]
    >>> service.handle({"op": "step", "sid": sid, "action": {"message": "hey"}})["obs"]
    {'echo': 'hey', 'length': 3}
    >>> service.handle({"op": "step", "sid": sid, "action": 5})["error"]["type"]
    'InvalidActionError'
    >>> service.shutdown()
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pydantic

import openenv_gym
from openenv_gym.envs.base import Environment
from openenv_gym.errors import InvalidRequestError, SessionNotFoundError, error_to_wire
from openenv_gym.models import model_space
from openenv_gym.protocol.slices import check_info_types, map_shared
from openenv_gym.protocol.wire import PROTOCOL_VERSION
from openenv_gym.server.sessions import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS, Session, SessionManager
from openenv_gym.server.slices import VectorSlice
from openenv_gym.spaces import short_repr, space_to_dict

__all__ = ["ConnectionScope", "EnvService"]


@dataclass
class ConnectionScope:
    """What one connection started with ``"bound": true`` (a forked child's copy of an env
    asks so): its front hands it to :meth:`EnvService.release` when the connection closes,
    since such a child may exit without ``close()`` (multiprocessing's children end with
    ``os._exit``) and its sessions would otherwise stay on the parent's worker for good."""

    #: Sessions started by a bound ``reset``.
    sids: set[str] = field(default_factory=set)
    #: Slices started by a bound ``slice_open``.
    slices: set[str] = field(default_factory=set)

    def note(self, request: dict[str, Any], reply: dict[str, Any]) -> None:
        """Record what a served ``request`` started, if it asked to be bound."""
        if request.get("bound") is not True:
            return
        if request.get("op") == "reset" and request.get("sid") is None:
            self.sids.add(reply["sid"])
        elif request.get("op") == "slice_open":
            self.slices.add(reply["slice"])


class EnvService:
    """Hosts the sessions of one env type and serves reset/step/state/... on them.

    Args:
        factory: Builds a fresh env (``lambda: EchoEnv(max_steps=10)``).
        env_name: Catalog name, reported in ``/spec`` and ``/health``.
        max_sessions: Most sessions at once.
        idle_timeout: Seconds before an idle session is closed.
    """

    def __init__(
        self,
        factory: Callable[[], Environment],
        env_name: str = "env",
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.env_name = env_name
        self.sessions = SessionManager(factory, max_sessions=max_sessions, idle_timeout=idle_timeout)
        self.started = time.time()
        # Spaces come from a real instance, which the first session then takes over.
        first = factory()
        self._spec = self._describe(first)
        self.sessions.keep_spare(first)
        self.slices: dict[str, VectorSlice] = {}
        self.binary_address: str | None = None
        self.http_address: str | None = None
        self._ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "spec": lambda r: {"spec": self.spec()},
            "health": lambda r: self.health(),
            "reset": lambda r: self.reset(r.get("sid"), r.get("seed"), r.get("options")),
            "step": lambda r: self.step(_sid(r), _field(r, "action")),
            "state": lambda r: {"state": self.state(_sid(r))},
            "render": lambda r: {"frame": self.render(_sid(r))},
            "close": lambda r: self.close(_sid(r)),
            "call": lambda r: {"value": self.call(_sid(r), _name(r), r.get("args") or [], r.get("kwargs") or {})},
            "get_attr": lambda r: self.get_attr(_sid(r), _name(r)),
            "set_attr": lambda r: self.set_attr(_sid(r), _name(r), _field(r, "value")),
            "slice_open": lambda r: self.open_slice(r.get("n"), r.get(_FD), r.get("size")),
            "slice_step": lambda r: self._slice(r).step(r),
            "web": lambda r: {"web": self.web(r.get("known"))},
        }

    # -- spec and health ---------------------------------------------------------------
    def _describe(self, env: Environment) -> dict[str, Any]:
        for kind in ("action", "observation"):
            if not isinstance(getattr(env, f"{kind}_space", None), gym.spaces.Space):
                raise TypeError(f"{type(env).__name__} declares no {kind} space: set the class "
                                f"attribute {kind}_model (a pydantic model) or assign "
                                f"self.{kind}_space (a gymnasium space) in __init__")
        spec: dict[str, Any] = {
            "protocol": PROTOCOL_VERSION,
            # The package version beside it: a peer of another protocol can then say which
            # openenv-gym runs here, so the user knows which side to upgrade.
            "version": openenv_gym.__version__,
            "env": self.env_name,
            "action_space": space_to_dict(env.action_space),
            "observation_space": space_to_dict(env.observation_space),
            "metadata": _plain(env.metadata),
            "render_mode": env.render_mode,
        }
        if not env.enforce_action_bounds:
            # The env takes a Box action in any float dtype as sent (Gym-v0): a vector client
            # then keeps float64 rows out of the space's float32 action column.
            spec["actions_as_sent"] = True
        if env.max_step_seconds is not None:
            spec["max_step_seconds"] = float(env.max_step_seconds)
        if env.reward_is_score:
            spec["reward_is_score"] = True
        if env.episode_limit is not None:
            spec["max_episode_steps"] = int(env.episode_limit)
        if getattr(env, "reward_threshold", None) is not None:
            spec["reward_threshold"] = float(env.reward_threshold)
        if getattr(env, "info_types", None):
            spec["info_types"] = check_info_types(env.info_types)  # a bad one fails the start, named
        if getattr(env, "action_model", None) is not None:
            spec["action_schema"] = env.action_model.model_json_schema()
        check = env.action_check() if callable(getattr(env, "action_check", None)) else None
        if check in ("schema", "space"):
            # A vector client checks text and mapping actions this way before it sends a batch.
            spec["action_check"] = check
        model = getattr(env, "observation_model", None)
        if model is not None and env.observation_space == model_space(model):
            # Only where the model is the whole observation: Echo's frame_shape adds a field
            # its model lacks, which a schema forbidding other fields would refuse.
            spec["observation_schema"] = model.model_json_schema()
        return spec

    def spec(self) -> dict[str, Any]:
        """Spaces, metadata and JSON schemas of the env this server hosts."""
        return self._spec

    def health(self) -> dict[str, Any]:
        """Liveness and load: env, openenv-gym version, pid, sessions, uptime and the
        addresses served."""
        return {
            "status": "ok",
            "env": self.env_name,
            "version": openenv_gym.__version__,
            "pid": os.getpid(),
            "sessions": len(self.sessions),
            "max_sessions": self.sessions.max_sessions,
            "uptime": time.time() - self.started,
            "binary": self.binary_address,
            "http": self.http_address,
        }

    # -- episode operations ------------------------------------------------------------
    def reset(self, sid: str | None = None, seed: int | None = None,
              options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Reset a session, creating one when ``sid`` is None.

        Returns:
            ``{"sid", "obs", "info"}``.
        """
        if sid is not None:
            session = self.sessions.get(sid)
            obs, info = session.reset(seed, options)
        else:
            session = self.sessions.create()
            try:
                obs, info = session.reset(seed, options)
            except BaseException:
                self.sessions.close(session.id)  # a refused first reset leaves no session behind
                raise
        return {"sid": session.id, "obs": obs, "info": info}

    def reset_unsent(self, requested: str | None, created: str) -> None:
        """A reset's reply could not be sent (the env returned what the front cannot encode):
        a session it created is closed, since its client never learns its id (it would hold
        a ``max_sessions`` slot until it expired). Each front calls this on a failed send.

        Args:
            requested: The ``sid`` the reset asked for (None: the reset created one).
            created: The ``sid`` in the unsent reply.
        """
        if requested is None:
            self.sessions.close(created)

    def step(self, sid: str, action: Any) -> dict[str, Any]:
        """Step a session with an action (validated before the env sees it).

        Args:
            sid: The session.
            action: The action as decoded from the wire.

        Returns:
            ``{"obs", "reward", "terminated", "truncated", "info"}``.
        """
        obs, reward, terminated, truncated, info = self.sessions.get(sid).step(action)
        return {"obs": obs, "reward": reward, "terminated": terminated, "truncated": truncated,
                "info": info}

    def state(self, sid: str) -> dict[str, Any]:
        """The env's state plus the server's episode bookkeeping."""
        session = self.sessions.get(sid)
        with session.lock:
            state = session.env.state()
            state.episode_id = session.episode_id
            state.step_count = session.step_count
            return state.model_dump() | {"episode_return": session.episode_return}

    def render(self, sid: str) -> Any:
        """What the env's ``render()`` returns (a frame array, text or None)."""
        session = self.sessions.get(sid)
        with session.lock:
            return session.env.render()

    def close(self, sid: str) -> dict[str, Any]:
        """Close a session."""
        self.sessions.close(sid)
        return {"closed": sid}

    def call(self, sid: str, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Call a public method of the env (``VectorEnv.call``); attributes are returned."""
        if name == "state" and not args and not kwargs:
            return self.state(sid)  # with the session's bookkeeping, as ``GET /state`` has it
        session = self.sessions.get(sid)
        with session.lock:
            target = session.env.get_wrapper_attr(name)
            return _model_as_dict(target(*args, **kwargs) if callable(target) else target)

    def get_attr(self, sid: str, name: str) -> dict[str, Any]:
        """Read a public attribute of the env (of the Gymnasium env it serves, if it wraps one).

        Returns:
            ``{"value": ...}``, or ``{"callable": True}`` for a method
            (``get_action_meanings``), which cannot cross the wire but can be called with
            ``call``: the client hands out a stand-in that does, as ``get_wrapper_attr``
            hands out the bound method locally.
        """
        session = self.sessions.get(sid)
        with session.lock:
            value = session.env.get_wrapper_attr(name)
            if callable(value):  # as Gymnasium's vector envs' call() judges a method
                return {"callable": True}
            return {"value": _model_as_dict(value)}

    def set_attr(self, sid: str, name: str, value: Any) -> dict[str, Any]:
        """Set a public attribute of the env, where :meth:`get_attr` reads it."""
        session = self.sessions.get(sid)
        with session.lock:
            session.env.set_wrapper_attr(name, value)
        return {}

    def open_slice(self, n: int, fd: int | None = None, size: int | None = None) -> dict[str, Any]:
        """Start ``n`` sessions as one :class:`~openenv_gym.server.slices.VectorSlice`.

        Args:
            n: Envs in the slice.
            fd: A shared buffer (memfd) from the trainer for the columns; None keeps them
                inline in the messages. The slice owns (and closes) it.
            size: The buffer's size as the trainer laid it out (checked against ours).

        Returns:
            ``{"slice", "sids", "size"}``.
        """
        buffer = None
        try:
            if fd is not None:
                if not isinstance(size, int) or size <= 0:
                    raise InvalidRequestError("slice_open with a shared buffer needs its 'size'")
                owned, fd = fd, None
                buffer = map_shared(owned, size)  # closes it, mapped or not
            piece = VectorSlice(self, n, buffer)
        except BaseException:
            if fd is not None:
                os.close(fd)
            if buffer is not None:
                buffer.close()
            raise
        if buffer is not None and piece.layout.size != size:
            piece.close(self)
            raise InvalidRequestError(f"slice layout mismatch: the trainer laid out {size} bytes, "
                                      f"this worker needs {piece.layout.size} (different spaces or versions)")
        self.slices[piece.id] = piece
        return {"slice": piece.id, "sids": [s.id for s in piece.sessions], "size": piece.layout.size}

    def _slice(self, request: dict[str, Any]) -> VectorSlice:
        piece = self.slices.get(request.get("slice"))  # type: ignore[arg-type]
        if piece is None:
            raise InvalidRequestError(f"no slice {short_repr(request.get('slice'))}; open one with slice_open")
        return piece

    def web(self, known: str | None = None) -> dict[str, Any]:
        """What the live web view shows of this server (see :mod:`openenv_gym.server.web`)."""
        from openenv_gym.server.web import snapshot  # numpy only; no web stack in the worker

        return snapshot(self, known if isinstance(known, str) else None)

    def session(self, sid: str) -> Session:
        """The session object (for the web view)."""
        return self.sessions.get(sid)

    # -- binary dispatch ---------------------------------------------------------------
    def handle(self, request: Any, fds: list[int] | None = None,
               scope: ConnectionScope | None = None) -> dict[str, Any]:
        """Serve one decoded binary request; errors become error replies, never exceptions.

        Args:
            request: The decoded request.
            fds: File descriptors that came with it (only ``slice_open`` takes one; others
                are closed).
            scope: The connection's :class:`ConnectionScope`, which records what a bound
                request starts (None: no connection to end it).
        """
        fds = list(fds or ())
        try:
            if not isinstance(request, dict):
                raise InvalidRequestError(f"a request must be a map with an 'op', got {type(request).__name__}")
            op = request.get("op")
            if fds and op == "slice_open":
                request[_FD] = fds.pop(0)  # a key no decoded message can hold
            if op == "batch":  # its calls run in the same connection's scope
                reply = {"results": [self.handle(c, scope=scope) for c in _calls(request)]}
            else:
                handler = self._ops.get(op) if isinstance(op, str) else None
                if handler is None:
                    raise InvalidRequestError(f"unknown op {short_repr(op)}; known: {', '.join([*self._ops, 'batch'])}")
                reply = handler(request)
            if scope is not None:
                scope.note(request, reply)
            return {"ok": True, **reply}
        except Exception as exc:  # any env bug becomes a typed reply; the worker keeps serving
            return {"ok": False, "error": error_to_wire(exc)}
        finally:
            for fd in fds:
                os.close(fd)

    def release(self, scope: ConnectionScope) -> None:
        """Close the slices and sessions a closed connection started bound (those still open)."""
        for slice_id in scope.slices:
            piece = self.slices.pop(slice_id, None)
            if piece is not None:
                piece.close(self)
        for sid in scope.sids:
            with contextlib.suppress(SessionNotFoundError):  # closed by its client, or expired
                self.sessions.close(sid)

    def shutdown(self) -> None:
        """Close every slice and session."""
        for piece in list(self.slices.values()):
            piece.close(self)
        self.slices.clear()
        self.sessions.close_all()


#: Where :meth:`EnvService.handle` puts a descriptor that came with ``slice_open``: an object,
#: not a string, so no client can name a descriptor of the worker's in its message.
_FD = object()


def _field(request: dict[str, Any], key: str) -> Any:
    if key not in request:
        raise InvalidRequestError(f"request {request.get('op')!r} needs the field {key!r}")
    return request[key]


def _sid(request: dict[str, Any]) -> str:
    sid = _field(request, "sid")
    if not isinstance(sid, str):
        raise InvalidRequestError(f"sid must be a string, got {type(sid).__name__}")
    return sid


def _name(request: dict[str, Any]) -> str:
    name = _field(request, "name")
    # A megabyte-long one came back whole in the env's AttributeError: no attribute is that long.
    if not isinstance(name, str) or not name.isidentifier() or name.startswith("_") or len(name) > 255:
        raise InvalidRequestError(f"name must be a public attribute name (at most 255 characters), "
                                  f"got {short_repr(name)}")
    return name


def _model_as_dict(value: Any) -> Any:
    """A served env's model (its ``state()``, an observation model) as the dict the wire
    carries; anything else as it is (the wire refuses what it cannot carry, by name)."""
    return value.model_dump() if isinstance(value, pydantic.BaseModel) else value


def _calls(request: dict[str, Any]) -> list[Any]:
    calls = _field(request, "calls")
    if not isinstance(calls, list) or any(isinstance(c, dict) and c.get("op") == "batch" for c in calls):
        raise InvalidRequestError("calls must be a list of non-batch requests")
    return calls


def _plain(value: Any) -> Any:
    """Keep only JSON-friendly parts of env metadata (some envs put objects there)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if _is_plain(v)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value if _is_plain(v)]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _is_plain(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool, type(None), list, tuple, dict, np.generic))
