"""A trainer killed together with its fork server (as Ray ends an env runner and its direct
children) while one of its process workers is stopped: neither the server's clean-up nor the
stopped worker's own owner watch can run, so the worker lived on until some later trainer's
start swept it. The server's sentinel, a detached process, sweeps it once both are gone; and
a server that ends on its own takes its sentinel with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from openenv_gym.providers import _forks
from openenv_gym.providers._runtime import worker_environ
from tests.conftest import stop_process
from tests.security.helpers import cmdline, proc_status, sentinels_of

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="forking needs pidfds (Linux 5.3+)")

TRAINER = """
import gymnasium as gym, openenv_gym
envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=1)
envs.reset(seed=0)
print(*(w.pid for w in envs.unwrapped.workers), flush=True)
import time; time.sleep(600)
"""


def test_a_stopped_worker_is_ended_when_its_trainer_and_fork_server_are_killed(procs) -> None:
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER], stdout=subprocess.PIPE, text=True)
    stopped = None
    try:
        first, second = trainer.stdout.readline().split()
        stopped, running = int(first), int(second)
        server = int(proc_status(stopped)["PPid"])
        assert b"openenv_gym.server.forkserver" in b" ".join(cmdline(server)), "workers are forked"
        sentinels = sentinels_of(trainer.pid)
        stop_process(stopped)
        os.kill(server, signal.SIGKILL)
        trainer.kill()
        trainer.wait(30)
        assert not procs.wait_gone({running}, 30.0), "the running worker noticed its owner is gone"
        assert not procs.wait_gone({stopped}, 90.0), "the stopped worker lives on"
        assert sentinels and not procs.wait_gone(sentinels, 30.0), "the sentinel ended after its sweep"
    finally:
        trainer.kill()
        if stopped is not None and procs.running({stopped}):
            os.kill(stopped, signal.SIGKILL)


def _server_and_its_sentinel() -> tuple[_forks.ForkServer, set[int]]:
    """A new fork server of this process, and the pid of the sentinel it started."""
    before = sentinels_of(os.getpid())
    server = _forks.ForkServer(worker_environ(trainer_path=True))
    return server, sentinels_of(os.getpid()) - before


def test_a_fork_server_that_ends_on_its_own_takes_its_sentinel_along(procs) -> None:
    server, sentinel = _server_and_its_sentinel()
    try:
        assert len(sentinel) == 1
        assert int(proc_status(next(iter(sentinel)))["PPid"]) != server.proc.pid, \
            "the sentinel is not the server's child (Ray would end it with the server)"
    finally:
        server.close()
    # Its owner (this test) lives on: without the server's word it would wait for it.
    assert not procs.wait_gone(sentinel, 30.0)


def test_a_fork_server_whose_sentinel_is_gone_still_ends_cleanly(procs) -> None:
    # A sentinel killed first (by anyone) left the server's goodbye to it unread: the write's
    # EPIPE ended the server with a traceback on its owner's stderr and exit status 1.
    server, sentinel = _server_and_its_sentinel()
    try:
        assert len(sentinel) == 1
        os.kill(next(iter(sentinel)), signal.SIGKILL)
        assert not procs.wait_gone(sentinel, 30.0)
    finally:
        server.close()
    assert server.proc.returncode == 0


SLOW_TO_DIE = """
import gymnasium as gym, openenv_gym, os, sys
from openenv_gym.providers import _forks
envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=1)
envs.reset(seed=0)
print(*(w.pid for w in envs.unwrapped.workers), flush=True)
sys.stdin.readline()
for server in _forks._servers.values():
    server._sock.close()  # as a dying owner's files close, before it is re-parented away
print("closed", flush=True)
sys.stdin.readline()
os._exit(0)
"""


def test_a_stopped_worker_is_ended_when_its_trainer_dies_slower_than_the_server_waits(procs) -> None:
    # A trainer's files close before it is gone (a slow exit: a GPU context torn down, many
    # threads): its fork server saw the socket close while it was still there, judged it
    # alive after 2 s and, leaving the clean-up undone, told its sentinel to leave too. The
    # stopped worker then lived on until some later trainer's start swept it.
    trainer = subprocess.Popen([sys.executable, "-c", SLOW_TO_DIE], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    stopped = None
    try:
        first, second = trainer.stdout.readline().split()
        stopped, running = int(first), int(second)
        server = int(proc_status(stopped)["PPid"])
        sentinels = sentinels_of(trainer.pid)
        assert sentinels, "the fork server started a sentinel"
        stop_process(stopped)
        trainer.stdin.write("close\n")
        trainer.stdin.flush()
        assert trainer.stdout.readline().strip() == "closed"
        assert not procs.wait_gone({server}, 30.0), "the server ends on its closed socket"
        assert procs.running(sentinels) == sentinels, "the sentinel waits for the trainer to be gone"
        trainer.stdin.write("exit\n")
        trainer.stdin.flush()
        trainer.wait(30)
        assert not procs.wait_gone({running}, 30.0), "the running worker noticed its owner is gone"
        assert not procs.wait_gone({stopped}, 90.0), "the stopped worker lives on"
        assert not procs.wait_gone(sentinels, 30.0), "the sentinel ended after its sweep"
    finally:
        trainer.kill()
        if stopped is not None and procs.running({stopped}):
            os.kill(stopped, signal.SIGKILL)
