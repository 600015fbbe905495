"""Vector envs over a pool of remote workers: :class:`RemoteVectorEnv` and its parts.

Example:
    >>> from openenv_gym.vector import RemoteVectorEnv
    >>> RemoteVectorEnv.metadata["autoreset_mode"].name
    'NEXT_STEP'
"""

from openenv_gym.vector.env import RemoteVectorEnv, parse_autoreset_mode
from openenv_gym.vector.pool import WorkerFailure, WorkerPool

__all__ = ["RemoteVectorEnv", "WorkerPool", "WorkerFailure", "parse_autoreset_mode"]
