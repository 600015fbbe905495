"""Load and soak: many sessions on one server, a 64-env vector env; nothing grows unbounded.

Bounded in CI (``SOAK`` seconds each, default 8); longer with
``OPENENV_GYM_SOAK_SECONDS=600``. Growth is measured from a warmed-up sample to the end:
open descriptors, threads, sessions and resident memory of the servers (and of the test
process for the vector env) must stay within fixed bounds, and idle sessions expire.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.client.transport import BinaryClient
from tests.conftest import ServedEnv, require_docker
from tests.security import helpers
from tests.security.helpers import record

SOAK = float(os.environ.get("OPENENV_GYM_SOAK_SECONDS", "8"))
FD_SLACK, THREAD_SLACK, RSS_SLACK_KIB = 8, 8, 96 * 1024


def _sample(pids: list[int]) -> dict[str, int]:
    return {"fds": sum(helpers.fd_count(p) for p in pids), "threads": sum(helpers.threads(p) for p in pids),
            "rss_kib": sum(helpers.rss_kib(p) for p in pids)}


def _growth(first: dict[str, int], last: dict[str, int]) -> dict[str, int]:
    return {k: last[k] - first[k] for k in first}


def _check_growth(growth: dict[str, int], where: str) -> None:
    assert growth["fds"] <= FD_SLACK, f"{where}: open fds grew by {growth['fds']}"
    assert growth["threads"] <= THREAD_SLACK, f"{where}: threads grew by {growth['threads']}"
    assert growth["rss_kib"] <= RSS_SLACK_KIB, f"{where}: memory grew by {growth['rss_kib']} KiB"


def test_concurrent_sessions_on_one_server_and_idle_expiry() -> None:
    n = 32
    server = ServedEnv("echo", "--max-sessions", str(n + 8), "--idle-timeout", "2")
    pid = server.proc.pid
    stop = threading.Event()
    steps = [0] * n
    errors: list[BaseException] = []

    def session(i: int) -> None:
        client = BinaryClient(server.binary, 30.0)
        try:
            sid = client.request({"op": "reset", "seed": i})["sid"]
            while not stop.is_set():
                out = client.request({"op": "step", "sid": sid, "action": {"message": f"s{i}"}})
                assert out["obs"]["echo"] == f"s{i}"
                steps[i] += 1
                if out["truncated"]:
                    client.request({"op": "reset", "sid": sid})
            # Leave the session open: the server must expire it.
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            client.drop()

    try:
        threads = [threading.Thread(target=session, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        # Warmed up means every session connected and stepping: on a loaded 2-core host
        # the ramp can outlast a fixed sleep, and the connections still arriving were
        # then counted as growth.
        ramped = helpers.wait_until(lambda: all(steps) or bool(errors), 30)
        assert ramped and not errors, (errors[:3], sum(map(bool, steps)))
        time.sleep(min(2.0, SOAK / 4))
        first = _sample([pid])
        time.sleep(SOAK)
        last = _sample([pid])
        health = BinaryClient(server.binary, 30.0)
        sessions_under_load = health.request({"op": "health"})["sessions"]
        stop.set()
        for t in threads:
            t.join(30)
        assert not errors, errors[:3]
        assert sessions_under_load == n
        growth = _growth(first, last)
        _check_growth(growth, "server under load")
        # Idle sessions expire (2 s idle timeout) and connection threads end.
        expired = helpers.wait_until(lambda: health.request({"op": "health"})["sessions"] == 0, 15)
        assert expired, health.request({"op": "health"})
        health.drop()
        settled = helpers.wait_until(lambda: helpers.threads(pid) <= 8, 10)
        assert settled, helpers.threads(pid)
    finally:
        stop.set()
        server.stop()
    total = sum(steps)
    record("loads", f"load: {n} concurrent sessions on one server for {SOAK:.0f} s",
           f"no growth beyond {FD_SLACK} fds / {THREAD_SLACK} threads / {RSS_SLACK_KIB >> 10} MiB; idle sessions expire",
           f"{total} steps; growth {growth['fds']} fds, {growth['threads']} threads, "
           f"{growth['rss_kib'] >> 10} MiB; all {n} idle sessions expired", "process")


@pytest.mark.parametrize("provider", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_vector_env_of_64_envs_soak(provider: str) -> None:
    if provider == "docker":
        require_docker()
    envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=64, env_id="CartPole-v1", provider=provider,
                        envs_per_worker=16, max_episode_steps=50)
    me = os.getpid()
    try:
        workers = envs.unwrapped.workers if hasattr(envs, "unwrapped") else envs.workers
        worker_pids = [w.pid for w in workers if getattr(w, "pid", None)]
        envs.reset(seed=0)
        rng = np.random.default_rng(0)

        def run(seconds: float) -> int:
            steps, end = 0, time.monotonic() + seconds
            while time.monotonic() < end:
                obs, rew, term, trunc, info = envs.step(rng.integers(0, 2, size=64))
                assert obs.shape == (64, 4) and np.isfinite(obs).all()
                steps += 1
            return steps

        run(min(2.0, SOAK / 4))
        first = _sample([me]), _sample(worker_pids) if worker_pids else None
        steps = run(SOAK)
        last = _sample([me]), _sample(worker_pids) if worker_pids else None
        containers: list[Any] = []
        if provider == "docker":
            client = helpers.docker_client()
            containers = helpers.our_containers(client, me)
            assert len(containers) == len(workers)
            client.close()
        growth = _growth(first[0], last[0])
        _check_growth(growth, "trainer process")
        if worker_pids:
            wg = _growth(first[1], last[1])
            _check_growth(wg, "workers")
        assert all(w.restarts == 0 for w in workers)
    finally:
        envs.close()
    record("loads", f"soak: vector env of 64 envs ({len(workers)} workers) for {SOAK:.0f} s",
           "no growth of fds / threads / memory beyond the bounds; no restarts",
           f"{steps * 64} env-steps; trainer growth {growth['fds']} fds, {growth['threads']} threads, "
           f"{growth['rss_kib'] >> 10} MiB", provider)
