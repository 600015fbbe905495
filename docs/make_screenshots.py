"""Screenshots of the live web view (``/web``) during an Atari and a FinRL episode.

Run from the project root (needs Debian's ``chromium`` and the dev extra's ``playwright``)::

    python docs/make_screenshots.py

Each env is served by ``openenv-gym serve``, an episode is driven from Python over the binary
client (random actions, seeded), and headless Chromium captures the page as it updates.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
from playwright.sync_api import sync_playwright

from openenv_gym.client.transport import BinaryClient

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def serve(env: str, kwargs: str) -> tuple[subprocess.Popen, str, str]:
    log = os.path.join(HERE, f".serve-{env}.log")
    proc = subprocess.Popen([sys.executable, "-m", "openenv_gym.cli", "serve", env, "--port", "0",
                             "--env-kwargs", kwargs], stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with open(log) as f:
            m = re.search(r"binary=(\S+) http=(\S+)", f.read())
        if m:
            os.unlink(log)
            return proc, m.group(1), m.group(2)
        time.sleep(0.1)
    raise RuntimeError(open(log).read())


def shoot(browser, env: str, kwargs: str, action, steps: int, out: str, sessions: int = 1) -> None:
    proc, binary, http = serve(env, kwargs)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{http}/web")
        rng = np.random.default_rng(0)
        clients = [BinaryClient(binary, timeout=60) for _ in range(sessions)]
        sids = [c.request({"op": "reset", "seed": i})["sid"] for i, c in enumerate(clients)]
        for _ in range(steps):
            for client, sid in zip(clients, sids):
                reply = client.request({"op": "step", "sid": sid, "action": action(rng)})
                if reply["terminated"] or reply["truncated"]:
                    client.request({"op": "reset", "sid": sid})
        page.locator(f"section[data-session='{sids[0]}'] tr[data-step='{steps}']").wait_for(timeout=30000)
        page.wait_for_timeout(500)  # let the frame image decode
        page.screenshot(path=out, full_page=False)
        print("wrote", out)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        shoot(browser, "atari", '{"game": "pong"}', lambda rng: int(rng.integers(0, 6)), 180,
              os.path.join(HERE, "web-atari.png"), sessions=2)
        shoot(browser, "finrl", '{"split": "train", "render_mode": "rgb_array"}',
              lambda rng: rng.uniform(-1, 1, 20).astype(np.float32), 60,
              os.path.join(HERE, "web-finrl.png"))
        browser.close()


if __name__ == "__main__":
    main()
