"""A start that fails leaves no hold on the Ray the provider started for it.

README (Scaling out): a Ray this provider started is shut down when its last worker stops. A
failed ``gym.make`` (an argument the env does not take, a worker no node can host) left the
provider's count of Ray users raised, so the local Ray ran on until the process exited, and
every later env's ``close()`` left it running too.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError, ProviderUnavailableError

ray = pytest.importorskip("ray")

OPTIONS = {"address": "local", "num_cpus": 0.5, "init_kwargs": {"num_cpus": 2}}


@pytest.mark.parametrize("kwargs, error", [
    ({"nope": 1}, InvalidRequestError),                                           # the worker refuses
    ({"provider_options": {**OPTIONS, "resources": {"nope": 1}}}, ProviderUnavailableError),  # no node fits
])
def test_a_failed_start_does_not_keep_the_ray_it_started(kwargs, error) -> None:
    if ray.is_initialized():
        ray.shutdown()
    kwargs = {"provider_options": OPTIONS, **kwargs}
    with pytest.raises(error):
        gym.make("OpenEnv/Echo-v0", provider="ray", **kwargs)
    assert not ray.is_initialized()
    # And a later env's close() still shuts it down.
    env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=OPTIONS)
    env.reset(seed=0)
    env.close()
    assert not ray.is_initialized()


def test_a_failed_start_leaves_ray_to_a_pool_of_the_same_provider_still_starting() -> None:
    """One provider starting two pools from two threads (two ``make_vec`` on one provider):
    the first pool's workers are still being placed, in no list yet, when the second fails.
    The failed start released Ray as if no worker of the provider were left, shutting it down
    under the first pool."""
    import threading
    import time

    from openenv_gym.providers.ray import RayProvider

    if ray.is_initialized():
        ray.shutdown()
    provider = RayProvider(**OPTIONS)
    first: dict[str, object] = {}

    def start_first() -> None:
        try:
            first["workers"] = provider.start("echo", 1, pool="first")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            first["error"] = exc

    thread = threading.Thread(target=start_first)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        # The first pool is placing its worker: Ray is up, and the worker is in no list yet.
        while not ("first" in provider._starting and ray.is_initialized()) or provider._workers:
            assert time.monotonic() < deadline and thread.is_alive(), first
            time.sleep(0.001)
        with pytest.raises(TypeError):  # refused before any worker of its own was placed
            provider.start("echo", 1, env_kwargs={"bad": object()}, pool="second")
        thread.join(120)
        assert "error" not in first, first.get("error")
        assert ray.is_initialized()
        (worker,) = first["workers"]  # type: ignore[misc]
        assert worker.alive()
    finally:
        thread.join(120)
        provider.close()
    assert not ray.is_initialized()
