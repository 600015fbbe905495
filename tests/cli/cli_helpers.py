"""Running the real ``openenv-gym`` command in subprocesses, and waiting for what it prints."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from typing import Any

CLI = [sys.executable, "-m", "openenv_gym.cli"]
#: Wide output, so rich does not wrap addresses in tables.
ENV = dict(os.environ, COLUMNS="250", PYTHONUNBUFFERED="1")

#: Python lines that drive an ``env`` made from the scaffold's guess-the-number template:
#: reset, a guess, a refused out-of-range guess, and the worker still serving afterwards.
SCAFFOLD_EPISODE = """
obs, info = env.reset(seed=3)
assert obs["hint"] == "start", obs
obs, reward, terminated, truncated, info = env.step({"guess": 50})
assert obs["hint"] in ("higher", "lower", "correct") and int(obs["guesses"]) == 1, obs
try:
    env.step({"guess": 500})
except openenv_gym.errors.InvalidActionError as exc:
    assert "guess" in str(exc)
else:
    raise AssertionError("an out-of-range guess was accepted")
obs, *_ = env.step({"guess": 10})  # the worker survived the bad action
assert int(obs["guesses"]) == 2, obs
"""


def run(*args: str, timeout: float = 120, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run ``openenv-gym ARGS`` to completion."""
    env = dict(ENV, **kwargs.pop("env", {}))
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env,
                          **kwargs)


def run_json(*args: str) -> Any:
    out = run(*args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def spawn(*args: str, log: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a long-running ``openenv-gym ARGS`` with output to the file ``log``."""
    with open(log, "wb") as f:
        return subprocess.Popen([*CLI, *args], stdout=f, stderr=subprocess.STDOUT, env=dict(ENV, **(env or {})))


def wait_for(pattern: str, log: str, proc: subprocess.Popen, timeout: float = 120) -> re.Match:
    """Wait until ``log`` contains ``pattern`` (a regex); fail early if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log, encoding="utf-8", errors="replace") as f:
            match = re.search(pattern, f.read())
        if match:
            return match
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    with open(log, encoding="utf-8", errors="replace") as f:
        raise AssertionError(f"{pattern!r} did not appear (exit {proc.poll()}):\n{f.read()}")


def end(proc: subprocess.Popen, timeout: float = 30) -> int:
    """Stop a process this test started (SIGTERM, then SIGKILL) and return its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(10)
