"""`openenv-gym serve` stopped or killed mid-step: the step's child never outlives the server.

The process the user starts supervises the server (cli/_supervise.py): a Ctrl-C ends the steps
in flight instead of waiting for their timeout; SIGKILL of either process leaves no step
running (before, the step's child was re-parented to init and ran on to its deadline)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time
import urllib.request
from typing import Any

import pytest

from tests.cli.cli_helpers import spawn, wait_for

#: A step's own timeout: far longer than anything here may wait for (a step that runs it out
#: means the stop did not end it).
STEP_TIMEOUT = 600


def _post(http: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"{http}/{path}", json.dumps(body).encode(), {"content-type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=STEP_TIMEOUT + 60))


def _running(token: str) -> list[int]:
    """Pids of processes whose command line holds ``token`` (the step's ``sleep``)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _gone(token: str, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while _running(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


class _StepInFlight:
    """`serve coding` with one step running a ``sleep`` its token names, from a thread."""

    def __init__(self, tmp_path: Any) -> None:
        self.log = str(tmp_path / "serve.log")
        self.proc = spawn("serve", "coding", "--port", "0", "--env-kwargs",
                          json.dumps({"max_timeout": STEP_TIMEOUT}), log=self.log)
        http = wait_for(r"http=(http://127\.0\.0\.1:\d+)", self.log, self.proc).group(1)
        sid = _post(http, "reset", {})["session_id"]
        self.token = f"{random.randrange(10**6, 10**7)}.5"  # a sleep no other process runs
        code = f"import subprocess; subprocess.run(['sleep', '{self.token}'])"
        self.reply: dict[str, Any] = {}

        def step() -> None:
            try:
                self.reply.update(_post(http, "step", {"session_id": sid, "action": {
                    "code": code, "timeout": STEP_TIMEOUT}}))
            except OSError as exc:  # the server was killed: no reply
                self.reply["error"] = exc

        self.thread = threading.Thread(target=step, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not _running(self.token):
            assert time.monotonic() < deadline and self.proc.poll() is None, _read(self.log)
            time.sleep(0.05)

    def server_pid(self) -> int:
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            children = [int(pid) for pid in f.read().split()]
        assert len(children) == 1, children  # the supervisor's one child: the server
        return children[0]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for pid in _running(self.token):  # only if a test failed: ours, by pid
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def served(tmp_path: Any) -> Any:
    step = _StepInFlight(tmp_path)
    yield step
    step.close()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_ends_the_step_in_flight_instead_of_waiting_for_its_timeout(served, sig) -> None:
    os.kill(served.proc.pid, sig)
    # Well inside the step's timeout: before, the server waited for it, silently.
    assert served.proc.wait(STEP_TIMEOUT / 3) == 0, _read(served.log)
    assert _gone(served.token)
    served.thread.join(30)
    observation = served.reply["observation"]
    assert observation["exit_code"] == -signal.SIGKILL and not observation["timed_out"], observation
    assert "Traceback" not in _read(served.log)


def test_a_second_ctrl_c_stops_at_once_without_tracebacks(served) -> None:
    os.kill(served.proc.pid, signal.SIGINT)
    time.sleep(0.01)  # two signals, not one (the kernel merges a second that is pending)
    os.kill(served.proc.pid, signal.SIGINT)
    # 0: the first had stopped it already; 130: the second killed it ("now").
    assert served.proc.wait(STEP_TIMEOUT / 3) in (0, 130)
    assert _gone(served.token)
    assert "Traceback" not in _read(served.log)  # uvicorn's "quit now" printed its tasks'


def test_a_killed_serve_leaves_no_step_running(served) -> None:
    server = served.server_pid()
    os.kill(served.proc.pid, signal.SIGKILL)  # the process the user started
    served.proc.wait(10)
    assert _gone(served.token), "the step's child outlived `serve`"
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{server}") and time.monotonic() < deadline:
        time.sleep(0.1)  # re-parented to init, which reaps it
    assert not os.path.exists(f"/proc/{server}"), "the server outlived its supervisor"


def test_a_killed_server_is_reported_and_its_step_ended(served) -> None:
    os.kill(served.server_pid(), signal.SIGKILL)
    assert served.proc.wait(60) == 1
    assert _gone(served.token, within=5.0), "the supervisor exited with the step still running"
    out = _read(served.log)
    assert re.search(r"the server was killed by SIGKILL; ended \d+ process", out), out
    served.thread.join(30)
    assert "error" in served.reply  # no reply came: the server died


def test_serve_called_in_process_is_not_split(monkeypatch) -> None:
    # main(argv) embeds the CLI: no fork, no subreaper, the caller's signal handlers kept.
    from openenv_gym.cli import main

    served: list[int] = []
    monkeypatch.setattr("openenv_gym.server.main.run_server", lambda *a, **k: served.append(os.getpid()))
    before = signal.getsignal(signal.SIGTERM)
    assert main(["serve", "echo", "--port", "0"]) == 0
    assert served == [os.getpid()] and signal.getsignal(signal.SIGTERM) is before
