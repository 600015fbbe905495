"""Text an env renders in "ansi" mode, in a real headless Chromium: colors, not escape codes.

FrozenLake marks the agent's cell only with an ANSI red background (``\\x1b[41mH\\x1b[0m``):
the page showed the escape codes as text (``FFF␛[41mH␛[0m``) and so no agent at all.
"""

from __future__ import annotations

from openenv_gym.client.transport import BinaryClient
from tests.web.test_browser import _serve, _stop, browser  # noqa: F401 (browser: the fixture)


def test_ansi_colors_are_shown_as_colors_without_console_errors(browser, tmp_path) -> None:  # noqa: F811
    proc, binary, http = _serve(tmp_path, "gym", "--env-kwargs",
                                '{"env_id": "FrozenLake-v1", "render_mode": "ansi"}')
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    try:
        page.goto(f"{http}/web")
        page.wait_for_selector("#status.live", timeout=15000)
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        client.request({"op": "step", "sid": sid, "action": 2})  # right (slippery: anywhere)
        card = page.locator(f"section[data-session='{sid}']")
        card.locator("tr[data-step='1']").wait_for(timeout=15000)
        text = card.locator("pre.obs").inner_text()
        assert "\x1b" not in text and "[41m" not in text and "[0m" not in text
        agent = card.locator("pre.obs span")
        assert agent.count() == 1 and agent.inner_text() in "SFHG"  # the agent's cell
        background = agent.evaluate("(span) => getComputedStyle(span).backgroundColor")
        assert background == "rgb(229, 72, 77)"  # red, as the terminal shows it
        assert len(text.replace("\n", "")) == 16 + len(text.splitlines()[0])  # the 4×4 map, all of it
        # A 256-colour or 24-bit colour's arguments are no codes of their own: its 0 is no
        # reset, its 1 no bold (the page draws neither kind, and keeps what was set before).
        red = {"backgroundColor": "red"}
        for params in ("38;5;1", "38;2;255;0;0", "48;5;0", "38;2;0;1;1;1"):
            assert page.evaluate("([style, params]) => sgr(style, params)", [red, params]) == \
                (red | {"fontWeight": "bold"} if params.endswith(";1;1;1") else red), params
        client.drop()
        assert errors == []  # nor the failed request of a missing /favicon.ico
    finally:
        page.close()
        _stop(proc)
