"""A pool being started on another thread is never left without its Ray (a Ray the provider
started outliving other work on it: test_ray_lifecycle).

Runs without the shared cluster: the provider starts a local Ray here.
"""

from __future__ import annotations

import threading

import pytest

import openenv_gym  # noqa: F401  (registers the ids)

ray = pytest.importorskip("ray")

from openenv_gym.providers.ray import RayProvider  # noqa: E402


def test_stop_all_on_another_thread_during_a_start_leaves_that_start_its_ray(monkeypatch) -> None:
    # A direct RayProvider user: one thread starts a pool while another stops the last
    # workers of the provider (here: none). Between the start's connect() and its pool's
    # registration the provider looked idle, and the stop released (shut down) its Ray.
    if ray.is_initialized():
        ray.shutdown()
    provider = RayProvider(address="local", num_cpus=0.25, init_kwargs={"num_cpus": 2})
    connect = RayProvider.connect
    stops: list[BaseException | None] = []

    def connect_then_stop_elsewhere(self: RayProvider) -> None:
        connect(self)
        if not stops:  # the first connect only: hold the window open for another thread's stop

            def stop() -> None:
                try:
                    provider.stop_all([])
                    stops.append(None)
                except BaseException as exc:  # noqa: BLE001 - checked below
                    stops.append(exc)

            thread = threading.Thread(target=stop)
            thread.start()
            thread.join(120)

    monkeypatch.setattr(RayProvider, "connect", connect_then_stop_elsewhere)
    try:
        [worker] = provider.start("echo")
        assert stops == [None]
        assert ray.is_initialized() and worker.alive()
    finally:
        provider.close()
    assert not ray.is_initialized()  # the last worker's release still shuts it down
