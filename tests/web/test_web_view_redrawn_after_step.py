"""The web view in a real headless Chromium never keeps showing a step's stale picture.

A snapshot taken while a step is still inside the env's lock, but after its bookkeeping was
recorded (the first step of each episode checks its output there), showed the previous
step's render under the new step's number; nothing changed afterwards, so the page kept that
stale view forever (after an episode's last step: for good).
"""

from __future__ import annotations

import threading
from typing import Any

from tests.server.live import PLAIN, Gate, GateEnv, live_server
from tests.web.test_browser import browser  # noqa: F401 (the fixture)


class LateCheckEnv(GateEnv):
    """GateEnv whose first step's output check (after the step is recorded) waits at the gate."""

    def check_output(self, call: str, obs: Any, info: Any, ended: bool = False) -> None:
        if call == "step":
            self.gate.enter()
        super().check_output(call, obs, info, ended)


def test_the_page_shows_the_render_of_the_step_it_numbers(browser, tmp_path) -> None:  # noqa: F811
    import httpx

    gate = Gate()
    with live_server(lambda: LateCheckEnv(gate)) as live:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            page.goto(f"{live.url}/web")
            page.wait_for_selector("#status.live", timeout=15000)
            sid = live.service.reset(seed=0)["sid"]
            card = page.locator(f"section[data-session='{sid}']")
            card.locator("pre.obs", has_text="after 0 steps").wait_for(timeout=15000)
            stepping = threading.Thread(target=live.service.step, args=(sid, PLAIN))
            stepping.start()
            assert gate.wait_inside(1)  # the step is recorded; its session is still locked
            card.locator("tr[data-step='1']").wait_for(timeout=15000)
            gate.open()
            stepping.join(30)
            # The step is over: /web/state (read afresh) renders it ...
            [state] = httpx.get(f"{live.url}/web/state").json()["sessions"]
            assert state["view"]["text"] == "after 1 steps"
            # ... and the live page must come to show it too.
            card.locator("pre.obs", has_text="after 1 steps").wait_for(timeout=15000)
            assert errors == []
        finally:
            page.close()
