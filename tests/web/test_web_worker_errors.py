"""The errors of a pool's page, in a real headless Chromium: one line per worker that failed.

The page joined them with newlines in a block that collapses whitespace, so the errors of two
workers ran together as one sentence ("w0: ... timeout w1: ... refused").
"""

from __future__ import annotations

from tests.web.test_browser import browser, live_page  # noqa: F401 (browser: the fixture)


def test_each_workers_error_is_on_a_line_of_its_own(browser, tmp_path) -> None:  # noqa: F811
    with live_page(browser, tmp_path, "echo") as (page, binary, errors):
        # What a pool's source sends when two of its workers do not answer (web.pool_source),
        # drawn and read in one call: no live update of this server comes in between.
        text = page.evaluate("""() => {
            render({version: "x", env: "echo", workers: ["w0", "w1", "w2"], sessions: [],
                    errors: {w0: "did not answer", w1: "refused the connection"}});
            return document.getElementById("errors").innerText; }""")
        assert text.splitlines() == ["w0: did not answer", "w1: refused the connection"]
