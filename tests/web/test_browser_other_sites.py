"""Pages of other sites, in a real headless Chromium, cannot drive or read a local env server:
DNS rebinding (a page of rebind.test whose name then answers 127.0.0.1) and cross-site forms
and no-cors fetches. The attacker's name is mapped to 127.0.0.1 in the browser
(--host-resolver-rules), as the attacker's DNS would answer after the page loaded."""

from __future__ import annotations

import functools
import http.server
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from tests.web.test_browser import CHROMIUM, ENV, FLAGS, _stop

ATTACK = """<!doctype html><html><body><form id="f" method="POST" target="sink" enctype="text/plain">
</form><iframe name="sink"></iframe><script>
async function rebound() {   // run once the name answers with the env server: same-origin
  const r = await fetch("/reset", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"});
  const s = await fetch("/web/state");
  return [r.status, s.status];
}
async function crossSite(target) {   // "simple" requests: no preflight
  await fetch(target + "/reset", {method: "POST", mode: "no-cors"});
  await fetch(target + "/reset", {method: "POST", mode: "no-cors", body: new Blob(["{}"])});
  const f = document.getElementById("f"); f.action = target + "/reset"; f.submit();
  await new Promise((ok) => document.querySelector("iframe").addEventListener("load", ok, {once: true}));
}
</script></body></html>"""


@pytest.fixture(scope="module")
def browser() -> object:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                               args=[*FLAGS, "--host-resolver-rules=MAP rebind.test 127.0.0.1"])
        yield b
        b.close()


def _attacker(tmp_path) -> http.server.ThreadingHTTPServer:
    (tmp_path / "attack.html").write_text(ATTACK)
    http.server.ThreadingHTTPServer.allow_reuse_address = True
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _serve(tmp_path, env: str, port: int = 0) -> tuple[subprocess.Popen, str]:
    log = tmp_path / f"serve-{env}.log"
    proc = subprocess.Popen([sys.executable, "-m", "openenv_gym.cli", "serve", env, "--port", str(port)],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=ENV)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"http=(\S+)", log.read_text())
        if m:
            return proc, m.group(1)
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    raise AssertionError(log.read_text())


def _sessions(http_url: str) -> list:
    return json.load(urllib.request.urlopen(http_url + "/sessions", timeout=30))


def test_a_rebound_page_can_neither_step_nor_read(browser, tmp_path) -> None:
    attacker = _attacker(tmp_path)
    port = attacker.server_address[1]
    page = browser.new_page()
    page.goto(f"http://rebind.test:{port}/attack.html")
    attacker.shutdown()
    attacker.server_close()  # the name now answers with the env server, on the same port
    proc, http_url = _serve(tmp_path, "coding", port)
    try:
        assert page.evaluate("rebound()") == [403, 403]
        assert _sessions(http_url) == []
    finally:
        page.close()
        _stop(proc)


def test_a_cross_site_page_creates_no_session(browser, tmp_path) -> None:
    attacker = _attacker(tmp_path)
    proc, http_url = _serve(tmp_path, "echo")
    page = browser.new_page()
    try:
        page.goto(f"http://rebind.test:{attacker.server_address[1]}/attack.html")
        page.evaluate(f"crossSite({json.dumps(http_url)})")
        assert _sessions(http_url) == []
        # The server's own page still drives it (as /docs' "Try it out" does).
        page.goto(f"{http_url}/web")
        status = page.evaluate("""fetch("reset", {method: "POST", headers: {"Content-Type": "application/json"},
                                                  body: "{}"}).then((r) => r.status)""")
        assert status == 200 and len(_sessions(http_url)) == 1
    finally:
        page.close()
        attacker.shutdown()
        _stop(proc)
