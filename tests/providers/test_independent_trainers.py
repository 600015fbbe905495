"""Two trainers on one machine stay independent: trainer A killed with SIGKILL mid-run loses
everything it started within seconds (workers or containers, fork server, sentinel, watchdog,
pool folders with their sockets), while trainer B, stepping all along, keeps every worker it
had and gets correct results. What this guards: a clean-up that judges by anything coarser
than A's identity (every worker under the runtime folder, every container with the project's
label) would end B's workers too, which B would only notice as a worker restart.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.conftest import require_docker

#: A trainer: two workers, its identity as one JSON line, then checked steps until ``STOP``
#: exists, then its workers again and their restarts. ``on_worker_error="raise"``: a lost
#: worker fails the trainer instead of being replaced quietly.
TRAINER = """
import json, os, sys
import gymnasium as gym, openenv_gym
from openenv_gym.providers import _forks
label, provider, stop = sys.argv[1:4]
envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider=provider, envs_per_worker=1,
                    on_worker_error="raise", max_steps=10**9)
envs.reset(seed=0)
ids = lambda: [w.pid if provider == "process" else w.container_id for w in envs.workers]
print(json.dumps({"pid": os.getpid(), "workers": ids(), "folders": sorted({w.folder for w in envs.workers}),
                  "fork_servers": [s.proc.pid for s in _forks._servers.values()]}), flush=True)
step = 0
while not os.path.exists(stop):
    step += 1
    messages = (f"{label}{step}a", f"{label}{step}b")
    obs, *_ = envs.step({"message": messages})
    assert tuple(obs["echo"]) == messages, (obs, messages)
    if step % 20 == 0:
        print("steps", step, flush=True)
print(json.dumps({"workers": ids(), "restarts": [w.restarts for w in envs.workers]}), flush=True)
envs.close()
"""


def _helpers_of(owner: int) -> set[int]:
    """The pids of the fork server's sentinel and the Docker watchdog started for ``owner``."""
    found = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        sentinel = "--sentinel" in argv and argv[argv.index("--owner-pid") + 1] == str(owner)
        watchdog = any(a.endswith("_docker_owner.py") for a in argv) and str(owner) in argv
        if sentinel or watchdog:
            found.add(int(entry))
    return found


def _containers_existing(ids: list[str]) -> list[str]:
    return [c for c in ids if subprocess.run(["docker", "inspect", c], capture_output=True).returncode == 0]


def _containers_running(ids: list[str]) -> list[str]:
    out = [subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", c], capture_output=True,
                          text=True).stdout.strip() for c in ids]
    return [c for c, state in zip(ids, out) if state == "true"]


class _Trainer:
    """A TRAINER subprocess, started in ``folder`` (not the repository: it imports as a user's would)."""

    def __init__(self, label: str, provider: str, folder: str) -> None:
        self.stop_file = os.path.join(folder, f"{label}.stop")
        self.proc = subprocess.Popen([sys.executable, "-c", TRAINER, label, provider, self.stop_file],
                                     stdout=subprocess.PIPE, text=True, cwd=folder)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        assert line, f"trainer {label} failed to start (exit {self.proc.wait()})"
        self.info: dict[str, Any] = json.loads(line)
        self.steps, self.last = 0, ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            if line.startswith("steps "):
                self.steps = int(line.split()[1])
            else:
                self.last = line

    def steps_past(self, count: int, timeout: float = 30.0) -> int:
        """Wait until it has stepped past ``count`` steps; returns the count reached."""
        deadline = time.monotonic() + timeout
        while self.steps <= count and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.steps > count, f"the trainer stopped stepping at {self.steps} (exit {self.proc.poll()})"
        return self.steps

    def finish(self) -> dict[str, Any]:
        """Stop it and return its last report (its workers and their restarts)."""
        open(self.stop_file, "w").close()
        assert self.proc.wait(60) == 0, f"trainer exited with {self.proc.returncode}"
        self._reader.join(10)
        return json.loads(self.last)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
@pytest.mark.parametrize("provider", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_killed_trainer_takes_only_its_own_workers(provider: str, tmp_path, procs) -> None:
    if provider == "docker":
        require_docker()
    trainers: list[_Trainer] = []
    try:
        trainers.append(b := _Trainer("b", provider, str(tmp_path)))
        trainers.append(a := _Trainer("a", provider, str(tmp_path)))
        a_helpers, b_helpers = _helpers_of(a.info["pid"]), _helpers_of(b.info["pid"])
        assert a_helpers and b_helpers, "each trainer has a sentinel (process) or a watchdog (docker)"
        b.steps_past(0)
        a.proc.kill()
        a.proc.wait(30)

        # A's whole footprint goes.
        a_procs = set(a_helpers) | set(a.info["fork_servers"])
        if provider == "process":
            a_procs |= set(a.info["workers"])
        assert not procs.wait_gone(a_procs, 30.0), "a process of the killed trainer lives on"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                any(map(os.path.exists, a.info["folders"]))
                or provider == "docker" and _containers_existing(a.info["workers"])):
            time.sleep(0.2)
        assert not any(map(os.path.exists, a.info["folders"])), "the killed trainer's folders (sockets) remain"
        if provider == "docker":
            assert not _containers_existing(a.info["workers"]), "the killed trainer's containers remain"

        # B lost nothing, and its steps after A's clean-up still echo what it sent.
        b.steps_past(b.steps + 40)
        if provider == "process":
            assert procs.running(set(b.info["workers"])) == set(b.info["workers"])
        else:
            assert _containers_running(b.info["workers"]) == b.info["workers"]
        assert procs.running(b_helpers | set(b.info["fork_servers"])) == b_helpers | set(b.info["fork_servers"])
        assert all(map(os.path.exists, b.info["folders"]))
        assert b.finish() == {"workers": b.info["workers"], "restarts": [0, 0]}
    finally:
        for trainer in trainers:
            trainer.proc.kill()
            trainer.proc.wait(30)
