"""The live web view: ``/web`` shows every session of a server (or of a whole pool) as it runs.

OpenEnv's idea of ``render()`` through a web page. For each session the page shows the current
observation (an image when the env renders ``rgb_array`` frames or its observation is an image,
text otherwise), the last actions with their rewards, the episode return and past returns. The
page updates itself over Server-Sent Events (``/web/events``); ``/web/state`` is the same data
as one JSON document.

Three layers, so a worker without HTTP can still feed a pool's page:

* :func:`snapshot` builds the view data of one :class:`~openenv_gym.server.service.EnvService`
  (no web stack needed; the binary op ``web`` returns it).
* :func:`web_router` serves the page and its streams for any *source* (a callable returning a
  snapshot), mounted on every env server's HTTP app.
* :func:`pool_source` merges the snapshots of many workers, read over their binary addresses
  (``openenv-gym start ... --web``).

Example:
    >>> from openenv_gym.envs.echo.env import EchoEnv
    >>> from openenv_gym.server.service import EnvService
    >>> service = EnvService(EchoEnv, env_name="echo")
    >>> sid = service.reset()["sid"]
    >>> _ = service.step(sid, {"message": "hi"})
    >>> view = snapshot(service)
    >>> view["sessions"][0]["history"][0]["reward"]
    0.2
    >>> snapshot(service, known=view["version"])["unchanged"]
    True
    >>> service.shutdown()
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import math
import os
import re
import struct
import threading
import time
import zlib
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

if TYPE_CHECKING:  # the web stack is imported only where a page is served
    from fastapi import APIRouter

    from openenv_gym.server.service import EnvService
    from openenv_gym.server.sessions import Session

__all__ = ["snapshot", "web_router", "shared", "pool_source", "encode_png", "openapi_31", "Source", "PAGE_PATH"]

#: A callable answering ``known_version -> snapshot`` (``{"unchanged": True}`` when unchanged).
Source = Callable[[str | None], dict[str, Any]]

#: The HTML page (plain HTML and JavaScript; no build step).
PAGE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "web", "index.html")

#: Steps of history shown per session.
HISTORY_SHOWN = 20
#: Longest text shown for one observation or action.
TEXT_LIMIT = 4000
#: Seconds between two looks for changes by an event stream.
POLL_PERIOD = 0.1
#: Seconds one event stream lasts; the browser reconnects by itself (``Last-Event-ID`` keeps
#: it from resending unchanged data). Bounded so a server that is shutting down never waits
#: long for an open page.
STREAM_LIFETIME = 5.0
#: An event stream's next snapshot is built no sooner than this many times as long as the
#: last one took after that one began, so the view keeps to about 1/BUILD_COST_FACTOR of a
#: core however costly a snapshot gets (200 sessions rendering ``rgb_array`` frames take
#: seconds each: one open page, building one per poll, kept a core busy).
BUILD_COST_FACTOR = 5.0


# -- images -------------------------------------------------------------------------------
def encode_png(image: np.ndarray) -> bytes:
    """Encode an image as PNG with zlib (no imaging library needed in a worker).

    Args:
        image: ``uint8`` array shaped ``(H, W)`` (gray), ``(H, W, 3)`` (RGB) or ``(H, W, 4)``.

    Returns:
        The PNG file's bytes.

    Example:
        >>> encode_png(np.zeros((2, 3, 3), np.uint8))[:8]
        b'\\x89PNG\\r\\n\\x1a\\n'
    """
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width = image.shape[:2]
    channels = 1 if image.ndim == 2 else image.shape[2]
    color_type = {1: 0, 3: 2, 4: 6}[channels]
    # Each row starts with its filter type (0: none).
    rows = np.hstack([np.zeros((height, 1), np.uint8), image.reshape(height, width * channels)])

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b""))


def as_image(value: Any) -> np.ndarray | None:
    """The displayable image inside an observation or frame, or None when it is not one.

    Accepts ``(H, W)``, ``(H, W, C)`` with C in 1, 3, 4, and frame stacks ``(K, H, W)``,
    ``(H, W, K)`` or ``(K, H, W, C)`` (the newest frame is shown). Floats in [0, 1] are scaled to 0..255.
    """
    if not isinstance(value, np.ndarray) or value.ndim not in (2, 3, 4) or value.size == 0:
        return None
    if not (np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating)):
        return None
    image = value
    if image.ndim == 4:  # a stack of color frames, (K, H, W, C) (Atari's grayscale_obs=False)
        if image.shape[0] > 8 or image.shape[3] not in (1, 3, 4):
            return None
        image = image[-1]  # the newest
    if image.ndim == 3:
        if image.shape[2] in (1, 3, 4) and min(image.shape[:2]) >= 8:
            image = image[:, :, 0] if image.shape[2] == 1 else image
        elif image.shape[0] <= 8 and min(image.shape[1:]) >= 8:
            image = image[-1]  # channels-first frame stack
        elif image.shape[2] <= 8 and min(image.shape[:2]) >= 8:
            image = image[:, :, -1]  # channels-last frame stack
        else:
            return None
    if min(image.shape[:2]) < 8:
        return None  # a small matrix is data, not a picture
    if np.issubdtype(image.dtype, np.floating):
        top = float(np.nanmax(image)) if image.size else 1.0
        image = np.nan_to_num(image * (255.0 if top <= 1.0 else 1.0))
    return np.clip(image, 0, 255).astype(np.uint8)


# -- text ---------------------------------------------------------------------------------
def _short(text: str, limit: int = TEXT_LIMIT) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    if not text.isascii():
        # A lone surrogate (a file name read with surrogateescape) has no UTF-8 form: one
        # such text made /web/state answer 500 and a pool's page lose the whole worker.
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON-friendly, size-bounded version of an observation or action."""
    if isinstance(value, np.ndarray):
        if value.size <= 64:
            return np.round(value.astype(np.float64), 4).tolist() if value.dtype.kind == "f" else value.tolist()
        return f"array{value.shape} {value.dtype} min={value.min():.4g} max={value.max():.4g}"
    if isinstance(value, np.generic):
        # As the Python value it stands for, shown as that is below: np.bytes_ gives bytes,
        # np.datetime64 a datetime, np.complex128 a complex (none of them JSON); np.longdouble
        # stays itself (repr).
        value = value.item()
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict) and depth < 4:
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and depth < 4:
        return [_plain(v, depth + 1) for v in value[:64]]
    if isinstance(value, str):
        return _short(value)
    return value if isinstance(value, (int, bool, type(None))) else _short(repr(value))


def as_text(value: Any) -> str:
    """Readable text for an observation: ``key: value`` lines for mappings, JSON otherwise."""
    plain = _plain(value)
    if isinstance(plain, dict):
        lines = []
        for key, item in plain.items():
            shown = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
            lines.append(f"{key}: {shown}" if "\n" not in shown else f"{key}:\n{shown}")
        return _short("\n".join(lines))
    return _short(plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False))


# -- snapshots ----------------------------------------------------------------------------
def _view(session: "Session", render: bool = True) -> dict[str, Any]:
    """Image and/or text of a session's current state.

    Args:
        session: The session.
        render: Call the env's ``render()`` (only with the session's lock held); otherwise
            show the last observation alone.
    """
    env, obs = session.env, session.last_obs
    frame: np.ndarray | None = None
    text = None
    if render and env.render_mode in ("rgb_array", "ansi") and session.episode_id is not None:
        try:
            rendered = env.render()
        except Exception as exc:  # a render bug must not break the page; show it instead
            rendered = f"render() failed: {type(exc).__name__}: {exc}"
        frame = as_image(rendered)
        if frame is None and rendered is not None:
            text = as_text(rendered)
    if frame is None:
        values = obs.values() if isinstance(obs, dict) else [obs]
        frame = next((img for img in map(as_image, values) if img is not None), None)
    if text is None and obs is not None:
        if isinstance(obs, np.ndarray) and as_image(obs) is not None:
            text = f"observation: {obs.dtype} array of shape {obs.shape}"
        else:
            text = as_text(obs)
    return {"frame": base64.b64encode(encode_png(frame)).decode() if frame is not None else None,
            "text": text}


def _current_view(session: "Session") -> tuple[dict[str, Any], tuple[int, int] | None]:
    """The session's view, rendered at most once per step and never waiting for a step.

    A step in flight holds the session's lock (a Coding step, up to a minute): the page then
    shows the view last rendered, or the recorded observation, rather than freeze every
    session's updates until the step ends. An unchanged session is not rendered again.

    Returns:
        The view and the ``(episode, step_count)`` it shows, or None for a view of the
        observation alone (the env's lock was held and nothing was rendered yet).
    """
    cached = session.view  # read once: another request's snapshot may set it meanwhile
    if _shows_current_step(session, cached):
        return cached[2], cached[:2]
    if not session.lock.acquire(blocking=False):
        return (cached[2], cached[:2]) if cached is not None else (_view(session, render=False), None)
    try:
        # Under the lock the record cannot change: the view is of exactly this step.
        key = (session.episode, session.step_count)
        session.view = (*key, _view(session))
        return session.view[2], key
    finally:
        session.lock.release()


def _shows_current_step(session: "Session", cached: tuple[int, int, dict[str, Any]] | None) -> bool:
    """Whether ``cached`` (the session's last rendered view) is of its current step."""
    return cached is not None and cached[:2] == (session.episode, session.step_count)


def _version(env_name: str, entries: Sequence[tuple[str, int, int, bool]]) -> str:
    """The version of a snapshot of sessions ``(id, episode, step_count, view is current)``.

    Whether each view is current is part of it: a view sent while a step still held its
    session (the previous step's picture under the new step's number) must not pass for the
    one rendered once the step is over, or the page would keep the stale picture for good.
    """
    key = ";".join(f"{sid}:{episode}:{steps}:{int(current)}" for sid, episode, steps, current in entries)
    return hashlib.blake2s(f"{env_name}|{key}".encode(), digest_size=8).hexdigest()


def snapshot(service: "EnvService", known: str | None = None) -> dict[str, Any]:
    """What ``/web`` shows of one server: its sessions with observation, actions and returns.

    Args:
        service: The env service.
        known: The ``version`` of a snapshot the caller already has.

    Returns:
        ``{"version", "unchanged": True}`` when nothing changed since ``known``; otherwise
        ``{"version", "env", "pid", "sessions": [...]}``, each session with ``id``, ``episode``,
        ``step_count``, ``episode_return``, ``returns``, ``history`` (step, action, reward) and
        ``view`` (``frame``: base64 PNG or None, ``text``) and ``view_current`` (False while a
        step in flight keeps the view of an earlier step: a later snapshot replaces it).
    """
    sessions = sorted(service.sessions.sessions(), key=lambda s: s.id)
    current = [_shows_current_step(s, s.view) for s in sessions]
    version = _version(service.env_name,
                       [(s.id, s.episode, s.step_count, c) for s, c in zip(sessions, current)])
    if known == version and all(current):
        return {"version": version, "unchanged": True}
    out, entries = [], []
    for s in sessions:
        # A consistent picture of the bookkeeping, which a step changes at its very end only:
        # this lock is never held for a step itself.
        with s.book:
            history = list(s.history)[-HISTORY_SHOWN:]
            record = {
                "id": s.id,
                "episode": s.episode,
                "step_count": s.step_count,
                "episode_return": _number(s.episode_return),
                "returns": [_number(r) for r in s.returns],
            }
        record["history"] = [{"step": n, "action": _short(as_text(a), 300), "reward": _number(r)}
                             for n, a, r in reversed(history)]
        record["view"], shown = _current_view(s)
        record["view_current"] = shown == (record["episode"], record["step_count"])
        out.append(record)
        entries.append((s.id, record["episode"], record["step_count"], record["view_current"]))
    version = _version(service.env_name, entries)
    if known == version:  # still the same stale views: nothing new to send
        return {"version": version, "unchanged": True}
    return {"version": version, "env": service.env_name, "pid": os.getpid(), "sessions": out}


def _number(value: float) -> float | None:
    """A reward or return as the page shows it: rounded, and None when not finite (an env's
    ``-inf`` reward), as ``/step`` writes it: JSON has no infinities."""
    return round(value, 6) if math.isfinite(value) else None


def pool_source(workers: Sequence[tuple[str, Callable[[], str]]], timeout: float = 10.0) -> Source:
    """A source merging the snapshots of many workers, read through their binary ``web`` op.

    Args:
        workers: ``(label, address_getter)`` per worker; the getter is called every time
            because a restarted worker may have a new address.
        timeout: Seconds one worker may take to answer.

    Returns:
        A :data:`Source` whose sessions carry a ``worker`` field (the label).
    """
    from openenv_gym.client.transport import BinaryClient
    from openenv_gym.errors import OpenEnvError
    from openenv_gym.protocol import ops

    lock = threading.Lock()
    clients: dict[str, BinaryClient] = {}
    cache: dict[str, dict[str, Any]] = {}

    def read(label: str, address: str) -> dict[str, Any]:
        client = clients.get(label)
        if client is None or client.address != address:
            client = clients[label] = BinaryClient(address, timeout)
        known = cache.get(label, {}).get("version")
        try:
            reply = client.request(ops.web(known))["web"]
        except OpenEnvError as exc:
            client.drop()
            return {"version": f"down:{type(exc).__name__}", "sessions": [], "error": str(exc)}
        if reply.get("unchanged"):
            return cache[label]
        return reply

    def source(known: str | None) -> dict[str, Any]:
        with lock:
            parts = []
            for label, address in workers:
                cache[label] = read(label, address())
                parts.append((label, cache[label]))
        version = hashlib.blake2s("|".join(p["version"] for _, p in parts).encode(),
                                  digest_size=8).hexdigest()
        if version == known:
            return {"version": version, "unchanged": True}
        sessions = [dict(s, worker=label) for label, p in parts for s in p["sessions"]]
        errors = {label: p["error"] for label, p in parts if "error" in p}
        env = next((p["env"] for _, p in parts if "env" in p), "?")
        return {"version": version, "env": env, "workers": [label for label, _ in parts],
                "errors": errors, "sessions": sessions}

    return source


def openapi_31(app: Any) -> None:
    """Keep ``app``'s ``/openapi.json`` a valid OpenAPI 3.1 document.

    FastAPI documents an event stream (``/web/events``) with ``itemSchema``, a keyword of
    OpenAPI 3.2, in a document it declares as 3.1.0: validators and client generators that
    read 3.1 refuse the whole document for it. Each such media type gets a plain 3.1
    ``schema`` instead, and keeps the event's schema as the extension ``x-itemSchema``.

    Args:
        app: A FastAPI app whose routes are all included.
    """
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = build()  # FastAPI caches it in app.openapi_schema: fixed once, in place
            for operations in doc.get("paths", {}).values():
                for operation in operations.values():
                    for response in operation.get("responses", {}).values():
                        for media in response.get("content", {}).values():
                            if "itemSchema" in media:
                                media["x-itemSchema"] = media.pop("itemSchema")
                                media.setdefault("schema", {"type": "string"})
        return app.openapi_schema

    app.openapi = openapi


def shared(source: Source) -> Callable[..., dict[str, Any]]:
    """``source`` read once per version, however many pages ask for it.

    Every open page polls for changes: each building its own snapshot of the same sessions
    (50 pages: 500 a second) slowed the steps of the very server they watch. The last
    snapshot built is kept, and a caller is given it whenever ``source`` says nothing changed
    since: the check costs little, the snapshot it saves a lot. While sessions step without
    pause every check finds a change, so a caller may also take a snapshot up to ``max_age``
    seconds old: the pages' streams then build one per period between them, not one each.
    Such a caller also takes it for :data:`BUILD_COST_FACTOR` times as long as ``source`` took
    to answer last, so that costly snapshots are built less often.

    Args:
        source: A :data:`Source`.

    Returns:
        A callable ``(known, max_age=0.0)`` answering as ``source`` does; ``max_age`` is how
        many seconds after ``source`` was last asked its answer may be given again unasked
        (stretched to ``BUILD_COST_FACTOR`` times its last answer's cost when above 0).

    Example:
        >>> built = []
        >>> def source(known):
        ...     if known == "1":
        ...         return {"version": "1", "unchanged": True}
        ...     built.append(known)
        ...     return {"version": "1", "sessions": []}
        >>> read = shared(source)
        >>> read(None) == read(None) == {"version": "1", "sessions": []}, len(built)
        (True, 1)
        >>> read("1")
        {'version': '1', 'unchanged': True}
    """
    lock = threading.Lock()
    last: dict[str, Any] | None = None  # the last snapshot built
    asked = -math.inf  # when source was last asked (last is current as of then)
    cost = 0.0  # seconds source took to answer then

    def read(known: str | None, max_age: float = 0.0) -> dict[str, Any]:
        nonlocal last, asked, cost
        with lock:  # a caller waits for a snapshot being built rather than build another
            if max_age > 0:
                max_age = max(max_age, BUILD_COST_FACTOR * cost)
            if last is None or time.monotonic() - asked >= max_age:
                asked = time.monotonic()
                data = source(last["version"] if last else None)
                cost = time.monotonic() - asked
                if data.get("unchanged"):
                    data = last
                else:
                    last = data
            else:
                data = last
        if data["version"] == known:
            return {"version": known, "unchanged": True}
        return data

    return read


# -- the page -----------------------------------------------------------------------------
def _policy(page: str) -> str:
    """The Content-Security-Policy of ``page``: its own inline script and style run, nothing else.

    The page shows text that actions and observations of anyone's sessions carry; it puts it
    in as text only, and this keeps any markup that ever got in from running (an injected
    ``onerror`` handler or ``<script>``) or loading anything. No other site may frame it
    (clickjacking).
    """

    def hashes(tag: str) -> str:
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.DOTALL)
        return " ".join("'sha256-" + base64.b64encode(hashlib.sha256(b.encode()).digest()).decode() + "'"
                        for b in blocks)

    return (f"default-src 'none'; script-src {hashes('script')}; style-src {hashes('style')}; "
            "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
            "frame-ancestors 'none'")


def web_router(source: Source, stopping: threading.Event | None = None,
               title: str = "openenv_gym") -> "APIRouter":
    """The routes of the web view: ``/web`` (page), ``/web/state`` (JSON), ``/web/events`` (SSE).

    Args:
        source: Where the data comes from (``lambda known: snapshot(service, known)``).
        stopping: Set when the server shuts down; open event streams then end at once.
        title: Shown as the page's heading.

    Returns:
        A FastAPI router to ``include_router`` into an app.

    Example:
        >>> from fastapi import FastAPI
        >>> app = FastAPI()
        >>> app.include_router(web_router(lambda known: {"version": "0", "sessions": []}))
    """
    from collections.abc import AsyncIterator

    from fastapi import APIRouter, Request
    from fastapi.responses import HTMLResponse
    from fastapi.sse import EventSourceResponse, ServerSentEvent
    from starlette.concurrency import run_in_threadpool

    from openenv_gym.server.http_errors import ErrorRoute, error_responses

    router = APIRouter(tags=["web view"], route_class=ErrorRoute,
                       responses=error_responses(403))  # LocalOnly, before any route
    stop = stopping or threading.Event()
    source = shared(source)

    # response_model=None: the return annotation is a string here (postponed annotations)
    # that FastAPI cannot resolve, which broke /openapi.json and /docs.
    @router.get("/web", response_class=HTMLResponse, response_model=None,
                summary="The live web view")
    def page() -> HTMLResponse:
        with open(PAGE_PATH, encoding="utf-8") as f:
            text = f.read().replace("{{title}}", html.escape(title))
        return HTMLResponse(text, headers={"Content-Security-Policy": _policy(text),
                                           "X-Content-Type-Options": "nosniff",
                                           "X-Frame-Options": "DENY"})

    # The JSON of both is FastAPI's, as /step's: a non-finite number is null (snapshots of a
    # pool's workers arrive over msgpack, which keeps infinities).
    @router.get("/web/state", summary="What the web view shows, as JSON",
                responses=error_responses(500))
    def state() -> dict[str, Any]:
        return source(None)

    async def events(request):  # annotated below: the types live in this function's scope
        # A snapshot the browser already has (it sends its last id when it reconnects). Read
        # from the request, not declared as a parameter: one that could fail validation
        # would document a JSON error reply on a route that only streams events.
        known = request.headers.get("last-event-id") or None
        yield ServerSentEvent(retry=300)
        ends = time.monotonic() + STREAM_LIFETIME
        while time.monotonic() < ends and not stop.is_set():
            data = await run_in_threadpool(source, known, POLL_PERIOD)
            if not data.get("unchanged"):
                known = data["version"]
                yield ServerSentEvent(data=data, id=known)
            await asyncio.sleep(POLL_PERIOD)

    events.__annotations__ = {"request": Request, "return": AsyncIterator[ServerSentEvent]}
    router.get("/web/events", response_class=EventSourceResponse,
               summary="The web view's updates (Server-Sent Events)",
               description="Each event's data is a /web/state document; a client that "
                           "reconnects with Last-Event-ID gets the next change only.")(events)
    return router
