"""The web view in a real headless Chromium says "live" across the server's routine stream ends.

Each ``/web/events`` stream ends after :data:`~openenv_gym.server.web.STREAM_LIFETIME` seconds
and the browser reconnects at once; the page showed "reconnecting…" in red at each of them (a
sixth of the time while many sessions stepped), though nothing was wrong.
"""

from __future__ import annotations

from openenv_gym.server import web
from tests.server.live import GateEnv, Gate, live_server
from tests.web.test_browser import browser  # noqa: F401 (the fixture)

RECORD = """() => {
    window.__statuses = [];
    new MutationObserver(() => window.__statuses.push(document.getElementById('status').textContent))
        .observe(document.getElementById('status'), {childList: true, characterData: true, subtree: true});
}"""


def test_the_status_stays_live_across_stream_ends_and_turns_down_with_the_server(browser, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setattr(web, "STREAM_LIFETIME", 0.2)  # a stream ends every 0.2 s
    page = browser.new_page()
    streams: list[str] = []
    page.on("request", lambda r: streams.append(r.url) if r.url.endswith("/web/events") else None)
    try:
        with live_server(lambda: GateEnv(Gate())) as live:
            page.goto(f"{live.url}/web")
            page.wait_for_selector("#status.live", timeout=15000)
            page.evaluate(RECORD)
            opened = len(streams)
            while len(streams) < opened + 4:  # at least three stream ends, each reconnected
                page.wait_for_event("request", timeout=15000)
            page.locator("#status.live").wait_for(timeout=15000)
            assert "reconnecting…" not in page.evaluate("window.__statuses")
        # The server is gone: the page says so (after a short grace).
        page.wait_for_selector("#status.down", timeout=15000)
        assert page.locator("#status").inner_text() == "reconnecting…"
    finally:
        page.close()
