"""Stable-Baselines3 support: :class:`RemoteVecEnv` (needs the ``sb3`` extra).

Importing ``openenv_gym`` never imports this package, so torch stays off its path.

Example:
    >>> from openenv_gym.sb3 import RemoteVecEnv
    >>> RemoteVecEnv.__name__
    'RemoteVecEnv'
"""

from openenv_gym.sb3.vec_env import RemoteVecEnv

__all__ = ["RemoteVecEnv"]
