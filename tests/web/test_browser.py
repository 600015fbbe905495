"""The live web view in a real headless Chromium: drive episodes from Python, watch them appear.

Needs Debian's ``chromium`` (``.ci/run`` installs it) and the ``playwright`` Python package (dev
extra); Playwright drives the system browser, it never downloads one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Iterator

import pytest

from openenv_gym.client.transport import BinaryClient

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ENV = dict(os.environ, COLUMNS="250", PYTHONUNBUFFERED="1")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.path.exists(CHROMIUM):
        pytest.fail("chromium is not installed: apt-get install -y chromium (.ci/run does it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


def _serve(tmp_path, *args: str) -> tuple[subprocess.Popen, str, str]:
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-m", "openenv_gym.cli", "serve", *args, "--port", "0"],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=ENV)
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = re.search(r"binary=(\S+) http=(\S+)", log.read_text())
        if m:
            return proc, m.group(1), m.group(2)
        assert proc.poll() is None, log.read_text()
        time.sleep(0.05)
    raise AssertionError(log.read_text())


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def live_page(browser: Any, tmp_path: Any, *serve_args: str) -> Iterator[tuple[Any, str, list[str]]]:
    """A page showing the ``/web`` of ``openenv-gym serve *serve_args``, live (its stream up):
    the page, the server's binary address, and the page's script errors (appended as they come).
    The page and the server end with the block."""
    proc, binary, http = _serve(tmp_path, *serve_args)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{http}/web")
        page.wait_for_selector("#status.live", timeout=15000)
        yield page, binary, errors
    finally:
        page.close()
        _stop(proc)


def test_echo_steps_appear_live_without_reload(browser, tmp_path) -> None:
    proc, binary, http = _serve(tmp_path, "echo")
    page = browser.new_page()
    try:
        page.goto(f"{http}/web")
        page.wait_for_selector("#status.live", timeout=15000)
        assert page.locator("#empty").is_visible()
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        card = page.locator(f"section[data-session='{sid}']")
        card.wait_for(timeout=15000)
        client.request({"op": "step", "sid": sid, "action": {"message": "hello browser"}})
        row = card.locator("tr[data-step='1']")
        row.wait_for(timeout=15000)
        assert "hello browser" in row.inner_text() and "1.3" in row.inner_text()  # reward 0.1 × 13
        client.request({"op": "step", "sid": sid, "action": {"message": "again"}})
        card.locator("tr[data-step='2']").wait_for(timeout=15000)
        assert "echo: again" in card.locator("pre.obs").inner_text()
        assert card.locator(".stat-return b").inner_text() == "1.800"
        page.evaluate("window.__same_page = true")  # proves updates came without a reload
        client.request({"op": "step", "sid": sid, "action": {"message": "x"}})
        card.locator("tr[data-step='3']").wait_for(timeout=15000)
        assert page.evaluate("window.__same_page") is True
        client.request({"op": "close", "sid": sid})
        card.wait_for(state="detached", timeout=15000)
        client.drop()
    finally:
        page.close()
        _stop(proc)


def test_rgb_array_frames_are_shown_as_images(browser, tmp_path) -> None:
    proc, binary, http = _serve(tmp_path, "gym", "--env-kwargs",
                                '{"env_id": "CartPole-v1", "render_mode": "rgb_array"}')
    page = browser.new_page()
    try:
        page.goto(f"{http}/web")
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        for _ in range(3):
            client.request({"op": "step", "sid": sid, "action": 1})
        card = page.locator(f"section[data-session='{sid}']")
        card.locator("tr[data-step='3']").wait_for(timeout=15000)
        img = card.locator("img.frame")
        img.wait_for(timeout=15000)
        size = page.evaluate("(img) => [img.naturalWidth, img.naturalHeight]", img.element_handle())
        assert size == [600, 400]  # CartPole's rgb_array frame, decoded by the browser
        client.drop()
    finally:
        page.close()
        _stop(proc)


def test_a_non_finite_reward_is_shown_and_the_page_keeps_updating(browser, tmp_path) -> None:
    # Pendulum started far out gives a -inf reward; JSON has no -inf, so the page gets null.
    proc, binary, http = _serve(tmp_path, "gym", "--env-kwargs", '{"env_id": "Pendulum-v1"}')
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{http}/web")
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0, "options": {"x_init": 1, "y_init": 1e200}})["sid"]
        out = client.request({"op": "step", "sid": sid, "action": [0.0]})
        assert out["reward"] == float("-inf")
        card = page.locator(f"section[data-session='{sid}']")
        row = card.locator("tr[data-step='1']")
        row.wait_for(timeout=15000)
        assert "n/a" in row.inner_text()
        other = client.request({"op": "reset", "seed": 1})["sid"]  # later updates still arrive
        page.locator(f"section[data-session='{other}']").wait_for(timeout=15000)
        assert errors == []
        client.drop()
    finally:
        page.close()
        _stop(proc)


def test_pool_page_shows_sessions_of_every_worker(browser, tmp_path) -> None:
    log = tmp_path / "start.log"
    proc = subprocess.Popen([sys.executable, "-m", "openenv_gym.cli", "start", "echo", "-n", "2",
                             "--provider", "process", "--web"],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=ENV)
    page = browser.new_page()
    try:
        import time

        deadline = time.monotonic() + 60
        while not re.search(r"web view: (\S+)", log.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        url = re.search(r"web view: (\S+)", log.read_text()).group(1)
        addresses = re.findall(r"(unix://\S+\.sock)", log.read_text())
        assert len(addresses) == 2
        page.goto(url)
        sids = []
        for i, address in enumerate(addresses):
            client = BinaryClient(address, timeout=30)
            sid = client.request({"op": "reset"})["sid"]
            client.request({"op": "step", "sid": sid, "action": {"message": f"from w{i}"}})
            sids.append(sid)
            client.drop()
        for i, sid in enumerate(sids):
            card = page.locator(f"section[data-key='w{i}/{sid}']")
            card.locator("tr[data-step='1']").wait_for(timeout=15000)
            assert f"from w{i}" in card.inner_text()
        assert "2 session(s) on 2 workers" in page.locator("#count").inner_text()
    finally:
        page.close()
        proc.terminate()
        assert proc.wait(30) == 0


def test_the_openapi_docs_page_renders_offline(browser, tmp_path) -> None:
    # FastAPI's own /docs loads Swagger UI from a CDN: on a machine without internet the page
    # stayed blank. Every request but the server's own is refused here, as offline.
    proc, _, http = _serve(tmp_path, "echo")
    page = browser.new_page()
    outside: list[str] = []

    def only_the_server(route) -> None:
        if route.request.url.startswith(http):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    try:
        page.route("**/*", only_the_server)
        page.goto(f"{http}/docs")
        page.locator(".opblock-summary-path", has_text="/reset").first.wait_for(timeout=30000)
        paths = page.locator(".opblock-summary-path").all_inner_texts()
        assert {"/reset", "/step", "/state", "/spec"} <= {p.strip() for p in paths}
        page.wait_for_load_state("networkidle")
        assert outside == []
    finally:
        page.close()
        _stop(proc)


def test_the_page_runs_its_own_script_and_styles_and_no_injected_markup(browser, tmp_path) -> None:
    # The page shows what anyone's actions and observations say; its Content-Security-Policy
    # keeps markup that ever got into it from running. It was "frame-ancestors 'none'" alone:
    # an injected onerror handler ran.
    proc, binary, http = _serve(tmp_path, "echo", "--env-kwargs",
                                '{"frame_shape": [16, 16, 3], "render_mode": "ansi"}')
    page = browser.new_page()
    page.add_init_script("window.__blocked = [];"
                         "document.addEventListener('securitypolicyviolation',"
                         " (e) => window.__blocked.push(e.violatedDirective));")
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        client = BinaryClient(binary, timeout=30)
        sid = client.request({"op": "reset", "seed": 0})["sid"]
        hostile = "\x1b[31m<img src=x onerror='window.__pwned=1'></pre><script>window.__pwned=2</script>"
        client.request({"op": "step", "sid": sid, "action": {"message": hostile}})
        client.drop()
        page.goto(f"{http}/web")
        page.wait_for_selector("#status.live", timeout=15000)  # the page's own script runs
        card = page.locator(f"section[data-session='{sid}']")
        card.locator("tr[data-step='1']").wait_for(timeout=15000)
        assert "<img src=x onerror='window.__pwned=1'>" in card.locator("td.action").inner_text()
        red = card.locator("pre.obs span").evaluate("(s) => getComputedStyle(s).color")
        assert red == "rgb(229, 72, 77)"  # its ANSI colors are drawn
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(15, 20, 25)"
        # (page.evaluate, not wait_for_function: its polling evals a string, which this very
        # policy refuses.)
        width = card.locator("img.frame").evaluate(
            "(img) => img.complete ? img.naturalWidth"
            " : new Promise((done) => img.addEventListener('load', () => done(img.naturalWidth)))")
        assert width == 16  # its data: frame loads
        assert page.evaluate("window.__blocked") == [] and errors == []
        # Markup that got in anyway (a future bug) neither runs nor loads.
        pwned = page.evaluate("""() => new Promise((done) => {
            const s = document.createElement('script');
            s.textContent = 'window.__pwned = "script"';
            document.body.appendChild(s);  // an inline script runs here if it may
            document.body.insertAdjacentHTML('beforeend', '<img id=x src=x onerror="window.__pwned=\\'onerror\\'">');
            // After the element's own handler, which was registered first.
            document.getElementById('x').addEventListener('error', () => done(window.__pwned ?? null));
        })""")
        assert pwned is None
    finally:
        page.close()
        _stop(proc)
