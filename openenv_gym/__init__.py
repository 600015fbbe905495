"""openenv_gym: reinforcement-learning environments as isolated remote services, for Gymnasium.

Importing the package registers the ``OpenEnv/*`` ids::

    import gymnasium as gym
    import openenv_gym

    env = gym.make("OpenEnv/Echo-v0")                       # a worker process starts
    vec = gym.make_vec("OpenEnv/Gym-v0", num_envs=8, env_id="CartPole-v1")

The import stays light: no server or web stack loads on the client's path.
"""

from __future__ import annotations

from openenv_gym._lazy import lazy_attributes
from openenv_gym.catalog import EnvInfo, all_envs, get_env_info
from openenv_gym.client.env import RemoteEnv
from openenv_gym.errors import (
    EnvServerError,
    InvalidActionError,
    InvalidDataError,
    InvalidRequestError,
    OpenEnvError,
    ProtocolError,
    ProviderUnavailableError,
    ResetNeededError,
    SessionLimitError,
    SessionNotFoundError,
    UnknownEnvironmentError,
    WorkerConnectionError,
    WorkerCrashedError,
    WorkerError,
    WorkerTimeoutError,
)
from openenv_gym.providers import get_provider
from openenv_gym.registration import register_envs

__version__ = "0.1.0"

__all__ = [
    "EnvInfo",
    "EnvServerError",
    "Environment",
    "InvalidActionError",
    "InvalidDataError",
    "InvalidRequestError",
    "OpenEnvError",
    "ProtocolError",
    "ProviderUnavailableError",
    "RemoteEnv",
    "RemoteVectorEnv",
    "ResetNeededError",
    "SessionLimitError",
    "SessionNotFoundError",
    "UnknownEnvironmentError",
    "WorkerConnectionError",
    "WorkerCrashedError",
    "WorkerError",
    "WorkerTimeoutError",
    "all_envs",
    "get_env_info",
    "get_provider",
    "register_envs",
]

# Lazily loaded: the env contract pulls in pydantic, the vector env its own machinery.
_LAZY = {
    "Environment": "openenv_gym.envs.base",
    "RemoteVectorEnv": "openenv_gym.vector.env",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    # Without it, dir() and tab completion miss the lazy names until they are first used.
    return sorted({*globals(), *_LAZY})


register_envs()
