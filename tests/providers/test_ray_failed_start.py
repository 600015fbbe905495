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
