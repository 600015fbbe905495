"""A provider's ``idle_timeout`` (set by ``openenv-gym start``, whose pools outlive the trainers
attached to them) reaches its workers: a session nobody calls closes. Without one (the workers
of an env or vector env), sessions stay until their owner closes them."""

from __future__ import annotations

import time

import pytest

from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import SessionNotFoundError
from openenv_gym.providers import get_provider
from tests.conftest import worker_sessions


def _left_session(address: str) -> str:
    """What a trainer killed mid-episode leaves: a session (its id), and no close."""
    client = BinaryClient(address, timeout=30)
    sid = client.request({"op": "reset", "seed": 0})["sid"]
    client.drop()
    return sid


def _until(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_provider_idle_timeout_reaches_its_workers(provider: str) -> None:
    workers_of = get_provider(provider)
    workers_of.idle_timeout = 0.5
    [worker] = workers_of.start("echo", 1)
    try:
        sid = _left_session(worker.address)
        assert _until(lambda: worker_sessions(worker.address) == 0), "the left session never closed"
        # A trainer that was only slow hears why, and what to change.
        client = BinaryClient(worker.address, timeout=30)
        with pytest.raises(SessionNotFoundError, match=r"expired after 0.5 s without a call .*--idle-timeout"):
            client.request({"op": "step", "sid": sid, "action": {"message": "hi"}})
        client.drop()
    finally:
        workers_of.stop_all([worker])


def test_without_an_idle_timeout_a_left_session_stays(provider: str) -> None:
    # The workers of gym.make/make_vec: their owner closes the sessions, however long it pauses.
    workers_of = get_provider(provider)
    [worker] = workers_of.start("echo", 1)
    try:
        _left_session(worker.address)
        time.sleep(1.5)
        assert worker_sessions(worker.address) == 1
    finally:
        workers_of.stop_all([worker])


