"""A redrawn frame keeps its size on the live web view, in a real headless Chromium.

Each step redraws its session's card with a new image, which was sized (twice its pixels)
only once it had loaded: until then it was painted at half that size, so the card of a
running Atari episode jumped in height several times a second.
"""

from __future__ import annotations

from openenv_gym.client.transport import BinaryClient
from tests.web.test_browser import browser, live_page  # noqa: F401 (browser: the fixture)


def test_a_new_frame_has_the_size_of_the_one_it_replaces_before_it_loads(browser, tmp_path) -> None:  # noqa: F811
    with live_page(browser, tmp_path, "echo", "--env-kwargs", '{"frame_shape": [100, 120, 3]}') as (page, binary, errors):
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        client.request({"op": "step", "sid": sid, "action": {"message": "a"}})
        card = page.locator(f"section[data-session='{sid}']")
        card.locator("tr[data-step='1']").wait_for(timeout=15000)
        width = card.locator("img.frame").evaluate(
            "(img) => img.complete && img.style.width ? img.style.width"
            " : new Promise((done) => img.addEventListener('load', () => done(img.style.width)))")
        assert width == "240px"  # twice the frame's 120 pixels
        # The size the next frame has when it is put in the page (a MutationObserver's callback
        # runs before the image can have loaded).
        page.evaluate("""() => { window.__inserted = new Promise((done) => {
            new MutationObserver((records, observer) => {
                for (const r of records) for (const n of r.addedNodes) {
                    const img = n.querySelector && n.querySelector('img.frame');
                    if (img && n.querySelector("tr[data-step='2']")) { observer.disconnect(); done(img.style.width); }
                }
            }).observe(document.getElementById('sessions'), { childList: true });
        }); }""")
        client.request({"op": "step", "sid": sid, "action": {"message": "b"}})
        assert page.evaluate("window.__inserted") == "240px"
        client.drop()
