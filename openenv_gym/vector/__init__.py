"""Vector envs over a pool of remote workers: :class:`RemoteVectorEnv`.

Its parts (:class:`~openenv_gym.vector.pool.WorkerPool`, ...) are importable from their
modules for tools and benchmarks, but are not part of the public API.

Example:
    >>> from openenv_gym.vector import RemoteVectorEnv
    >>> RemoteVectorEnv.metadata["autoreset_mode"].name
    'NEXT_STEP'
"""

from openenv_gym.vector.env import RemoteVectorEnv, parse_autoreset_mode
from openenv_gym.vector.pool import WorkerFailure, WorkerPool

# WorkerPool, WorkerFailure and parse_autoreset_mode stay importable here (older code imports
# them), but users should not rely on them: the public surface is the vector env.
__all__ = ["RemoteVectorEnv"]
