"""Stable-Baselines3 support: :class:`RemoteVecEnv` (needs the ``sb3`` extra).

Importing ``openenv_gym`` never imports this package, so torch stays off its path.

Example:
    >>> from openenv_gym.sb3 import RemoteVecEnv
    >>> RemoteVecEnv.__name__
    'RemoteVecEnv'
"""

try:
    from openenv_gym.sb3.vec_env import RemoteVecEnv
except ModuleNotFoundError as _exc:
    if _exc.name is None or _exc.name.partition(".")[0] != "stable_baselines3":
        raise
    raise ModuleNotFoundError(f"openenv_gym.sb3 needs Stable-Baselines3 ({_exc}): "
                              "pip install 'openenv-gym[sb3]'", name=_exc.name) from _exc

__all__ = ["RemoteVecEnv"]
