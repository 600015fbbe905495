"""Hostile shell commands sent through ``OpenEnv/Git-v0`` (free-form), on both providers.

The Git env runs each command with bash in a child of its own session, with rlimits and a
deadline (the same runner as Coding-v0). Attacks the process provider cannot stop run on
Docker only, as in ``test_attacks.py``.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.errors import OpenEnvError, WorkerError
from tests.conftest import require_docker
from tests.security.helpers import HostProbe, record

ROOT = os.geteuid() == 0
DOCKER_ONLY = "only Docker isolates this (the process provider shares the host's {})"


def _timed_out(obs: Any) -> str:
    assert isinstance(obs, dict) and obs["timed_out"], obs
    return "killed at the deadline"


def _output(*wanted: str) -> Callable[[Any], str]:
    def check(obs: Any) -> str:
        assert isinstance(obs, dict), obs
        for w in wanted:
            assert w in obs["output"], (w, obs["output"][-500:])
        return "; ".join(wanted)
    return check


def _capped(obs: Any) -> str:
    assert isinstance(obs, dict) and len(obs["output"]) < 70_000 and "truncated" in obs["output"], obs
    return f"output capped at {len(obs['output'])} chars"


def _worker_error(outcome: Any) -> str:
    assert isinstance(outcome, WorkerError), outcome
    return f"{type(outcome).__name__} on the client"


# (name, command, timeout, check, process skip reason, worker dies)
GIT_ATTACKS: list[tuple[str, str, float, Callable[[Any], str], str | None, bool]] = [
    ("shell fork bomb", ":(){ :|:& };:", 2.0, lambda obs: "step ended: " + (
        "timed out" if obs["timed_out"] else f"exit {obs['exit_code']}"),
     "root ignores RLIMIT_NPROC; only Docker's pids_limit bounds it" if ROOT else None, False),
    ("sleep past the timeout", "sleep 3600", 1.0, _timed_out, None, False),
    ("output flood (yes)", "yes openenv", 3.0, _capped, None, False),
    ("writes to /etc and /usr", "echo x > /etc/openenv-gym-pwned; echo etc=$?; "
     "echo x > /usr/openenv-gym-pwned; echo usr=$?", 3.0, _output("etc=1", "usr=1"),
     DOCKER_ONLY.format("file system"), False),
    ("network and DNS", "echo routes=$(tail -n +2 /proc/net/route | wc -l); "
     "getent hosts pypi.org >/dev/null && echo dns=resolved || echo dns=fails", 5.0,
     _output("routes=0", "dns=fails"), DOCKER_ONLY.format("network"), False),
    ("setsid daemon", "setsid sleep 600 > /dev/null 2>&1 < /dev/null & echo started", 3.0,
     _output("started"), DOCKER_ONLY.format("process table (the daemon outlives the step)"), False),
    ("kill the env server ($PPID)", "kill -9 $PPID", 3.0, _worker_error, None, True),
]


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def git_env(request: pytest.FixtureRequest) -> Iterator[tuple[str, gym.Env]]:
    if request.param == "docker":
        require_docker()
    env = gym.make("OpenEnv/Git-v0", provider=request.param, step_timeout=3.0, max_timeout=10.0,
                   timeout=30.0)
    yield request.param, env
    env.close()


@pytest.mark.parametrize("attack", GIT_ATTACKS, ids=[a[0] for a in GIT_ATTACKS])
def test_git_command_attack(git_env: tuple[str, gym.Env], attack) -> None:
    provider, env = git_env
    name, command, timeout, check, process_skip, dies = attack
    if provider == "process" and process_skip:
        pytest.skip(process_skip)
    probe = HostProbe.take()
    env.reset()
    worker = env.unwrapped._worker
    restarts = worker.restarts
    try:
        outcome: Any = env.step({"command": command, "timeout": timeout})[0]
    except OpenEnvError as exc:
        outcome = exc
    observed = check(outcome)
    start = time.monotonic()
    env.reset()
    obs, *_ = env.step({"command": "echo ok"})
    took = time.monotonic() - start
    assert obs["output"].strip().endswith("ok"), obs
    assert (worker.restarts > restarts) == dies
    assert not probe.problems(), probe.problems()
    record("attacks", f"Git-v0 command: {name}", "typed outcome; host unaffected; next episode works",
           f"{observed}; {'worker replaced' if dies else 'worker survived'}, next episode OK after "
           f"{took:.2f} s", provider)
