"""An action's lines and indentation on the live web view, in a real headless Chromium.

The history table's action cell collapsed whitespace as HTML does: a Coding program (or a Git
script) read as one line of words, its indentation -- Python's block structure -- gone.
"""

from __future__ import annotations

from openenv_gym.client.transport import BinaryClient
from tests.web.test_browser import browser, live_page  # noqa: F401 (browser: the fixture)


def test_a_multi_line_action_keeps_its_lines_and_indentation(browser, tmp_path) -> None:  # noqa: F811
    with live_page(browser, tmp_path, "echo") as (page, binary, errors):
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        program = "def f(x):\n    if x:\n        return 1\n    return 2"
        client.request({"op": "step", "sid": sid, "action": {"message": program}})
        cell = page.locator(f"section[data-session='{sid}'] tr[data-step='1'] td.action")
        cell.wait_for(timeout=15000)
        assert cell.inner_text() == "message:\n" + program
        client.drop()
