"""broken_ray() in a fork of the process that started Ray (a DataLoader worker): Ray's
Popen.poll() of the raylet and GCS, not the fork's children, gets ECHILD and reports them
exited, so the fork judged the parent's healthy Ray dead and acquire_ray() set out to shut it
down and SIGKILL its workers (measured: "lost its gcs_server and raylet", then the fork hung in
ray.shutdown()). Only the process that started it judges it. No Ray is started here."""

from __future__ import annotations

import os

import pytest

ray = pytest.importorskip("ray")
from openenv_gym.providers import _ray_connection as rc  # noqa: E402


class _Node:
    def dead_processes(self):  # what a fork's Popen.poll() says of every Ray process
        return [("gcs_server", None), ("raylet", None)]


@pytest.fixture()
def started_here(monkeypatch):
    session = ("127.0.0.1:6379", "01000000")
    monkeypatch.setattr(rc, "_we_started", True)
    monkeypatch.setattr(rc, "_our_session", session)
    monkeypatch.setattr(rc, "_started_pid", os.getpid(), raising=False)
    monkeypatch.setattr(rc, "ray_session", lambda: session)
    monkeypatch.setattr(rc.ray, "is_initialized", lambda: True)
    monkeypatch.setattr(rc, "_local_node", lambda: _Node())


def test_the_starting_process_sees_its_dead_core(started_here) -> None:
    assert rc.broken_ray() == "gcs_server and raylet"


def test_a_fork_never_judges_the_parents_ray(started_here, monkeypatch) -> None:
    parent = os.getpid()
    monkeypatch.setattr(rc.os, "getpid", lambda: parent + 1)  # as after os.fork()
    assert rc.broken_ray() == ""
