"""A server of another protocol is refused at connect (read_spec's ProtocolError); the workers
started for it stop then, as gym.make's do, not when the half-made vector env or EnvPool is
garbage collected: a notebook keeps the traceback (sys.last_traceback), and with it the
object, so its workers (docker containers) ran on until the kernel restarted."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
import openenv_gym.client.spec as client_spec
from openenv_gym.errors import ProtocolError
from openenv_gym.providers.process import ProcessProvider


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list:
    workers: list = []
    real = ProcessProvider.start

    def start(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        workers.extend(out)
        return out

    monkeypatch.setattr(ProcessProvider, "start", start)
    monkeypatch.setattr(client_spec, "PROTOCOL_VERSION", client_spec.PROTOCOL_VERSION + 1)
    return workers


def _make_vec() -> None:
    gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process")


def _env_pool() -> None:
    pytest.importorskip("openenv_gym.trl")
    from openenv_gym.trl import EnvPool

    EnvPool("OpenEnv/Echo-v0", num_workers=1, provider="process")


@pytest.mark.parametrize("make", [_make_vec, _env_pool], ids=["make_vec", "EnvPool"])
def test_workers_stop_when_the_protocol_is_refused(started: list, make) -> None:
    with pytest.raises(ProtocolError, match="protocol") as caught:
        make()
    held = caught.value.__traceback__  # as a notebook holds it  # noqa: F841
    assert started, "no worker was started"
    assert not any(w.alive() for w in started), "workers still running after the refusal"
    del held
