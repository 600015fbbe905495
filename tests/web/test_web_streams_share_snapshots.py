"""Many open pages share one snapshot per version: each ``/web/events`` stream built its own
(50 pages: 500 snapshots a second), which slowed the steps of the server they watched."""

from __future__ import annotations

import contextlib
import json
from types import SimpleNamespace
from typing import Any, Iterator

import httpx

from openenv_gym.server import web
from tests.server.live import PLAIN, Gate, GateEnv, live_server

PAGES = 5


def _next_data(lines: Iterator[str]) -> dict[str, Any]:
    return json.loads(next(line for line in lines if line.startswith("data:"))[5:])


def test_open_pages_share_one_snapshot_per_version(monkeypatch) -> None:
    built: list[str] = []
    real = web.snapshot

    def counted(service: Any, known: str | None = None) -> dict[str, Any]:
        out = real(service, known)
        if not out.get("unchanged"):
            built.append(out["version"])
        return out

    monkeypatch.setattr(web, "snapshot", counted)
    monkeypatch.setattr(web, "STREAM_LIFETIME", 120.0)  # no stream ends while the test reads
    with live_server(lambda: GateEnv(Gate())) as live:
        sid = live.service.reset(seed=0)["sid"]
        with httpx.Client(timeout=30) as client, contextlib.ExitStack() as stack:
            pages = []
            for _ in range(PAGES):
                stream = stack.enter_context(client.stream("GET", f"{live.url}/web/events"))
                pages.append(stream.iter_lines())
            first = [_next_data(lines) for lines in pages]
            live.service.step(sid, PLAIN)
            second = [_next_data(lines) for lines in pages]
    assert {d["sessions"][0]["step_count"] for d in first} == {0}
    assert {d["sessions"][0]["step_count"] for d in second} == {1}
    # One per version, not one per page (a snapshot taken while the step still held its
    # session is a version of its own, built once too).
    assert len(built) == len(set(built)) >= 2, built


def test_pages_polling_sessions_that_never_stop_share_one_snapshot_per_period() -> None:
    # While sessions step without pause every poll finds a change: each page's stream built
    # a snapshot of its own (rendering every session), so each page opened cost the server
    # as much as the first (20 pages on 4 echo sessions stepping: 106 snapshots a second).
    built = []

    def always_changed(known: str | None) -> dict[str, Any]:
        built.append(known)
        return {"version": str(len(built)), "sessions": []}

    read = web.shared(always_changed)
    first = read(None, 60.0)  # a generous period: every read below falls within it
    assert [read(None, 60.0) for _ in range(PAGES)] == [first] * PAGES
    assert len(built) == 1
    assert read(first["version"], 60.0) == {"version": first["version"], "unchanged": True}
    assert read(None)["version"] == "2"  # /web/state asks for the latest


def test_costly_snapshots_are_built_in_proportion_to_their_cost(monkeypatch) -> None:
    # 200 sessions rendering rgb_array frames take seconds per snapshot: a page polling every
    # POLL_PERIOD built one per poll, back to back, and kept a core busy for the view alone.
    now = [0.0]
    monkeypatch.setattr(web, "time", SimpleNamespace(monotonic=lambda: now[0]))
    built: list[float] = []

    def costly(known: str | None) -> dict[str, Any]:
        built.append(now[0])
        now[0] += 1.0  # a snapshot that takes a second of the clock to build
        return {"version": str(len(built)), "sessions": []}

    read = web.shared(costly)
    for _ in range(600):  # a stream polling for a minute of the clock
        read(None, web.POLL_PERIOD)
        now[0] += web.POLL_PERIOD
    busy = len(built) * 1.0
    assert 2 <= len(built) and busy <= now[0] / 4, (busy, now[0])  # was 600 s of 660
    gaps = [b - a for a, b in zip(built, built[1:])]
    assert min(gaps) >= web.BUILD_COST_FACTOR * 1.0, gaps
    # /web/state asks for the latest, whatever it costs.
    assert read(None)["version"] == str(len(built))


def test_cheap_snapshots_still_come_every_poll_period(monkeypatch) -> None:
    now = [0.0]
    monkeypatch.setattr(web, "time", SimpleNamespace(monotonic=lambda: now[0]))
    built: list[float] = []

    def cheap(known: str | None) -> dict[str, Any]:
        built.append(now[0])
        now[0] += web.POLL_PERIOD / 100
        return {"version": str(len(built)), "sessions": []}

    read = web.shared(cheap)
    for _ in range(10):
        read(None, web.POLL_PERIOD)
        now[0] += web.POLL_PERIOD
    assert len(built) == 10
