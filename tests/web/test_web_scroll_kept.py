"""A live update keeps where the reader scrolled and the keyboard focus, in a real headless Chromium.

Each step redraws its session's card: the observation box and the history scrolled back to the
top and lost the focus at every step, so the end of a long output (a program's printout) could
not be read, nor scrolled with the keys, while its session ran.
"""

from __future__ import annotations

from openenv_gym.client.transport import BinaryClient
from tests.web.test_browser import browser, live_page  # noqa: F401 (browser: the fixture)


def test_a_step_keeps_the_scroll_position_and_focus_of_the_observation(browser, tmp_path) -> None:  # noqa: F811
    with live_page(browser, tmp_path, "echo") as (page, binary, errors):
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        card = page.locator(f"section[data-session='{sid}']")
        lines = "\n".join(f"line {i}" for i in range(200))
        client.request({"op": "step", "sid": sid, "action": {"message": lines}})
        card.locator("tr[data-step='1']").wait_for(timeout=15000)
        box = card.locator("pre.obs")
        box.focus()  # as Tab reaches it
        # The key scrolls smoothly: its end is the scrollend event, not the moment it returns.
        box.evaluate("(b) => { window.__scrolled = new Promise((done) =>"
                     " b.addEventListener('scrollend', () => done(b.scrollTop), { once: true })); }")
        page.keyboard.press("End")
        scrolled = page.evaluate("window.__scrolled")
        assert scrolled > 100
        client.request({"op": "step", "sid": sid, "action": {"message": lines + "\nmore"}})
        card.locator("tr[data-step='2']").wait_for(timeout=15000)
        assert card.locator("pre.obs").evaluate("(b) => b.scrollTop") >= scrolled
        assert page.evaluate("document.activeElement.matches('pre.obs')")  # the keys still scroll it
        assert errors == []
        client.drop()
