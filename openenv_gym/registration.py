"""Registers every catalog env with Gymnasium (done by ``import openenv_gym``).

``gym.make(id)`` builds a :class:`~openenv_gym.client.env.RemoteEnv`; plain
``gym.make_vec(id, num_envs=N)`` builds a :class:`~openenv_gym.vector.RemoteVectorEnv`
through ``vector_entry_point``.
"""

from __future__ import annotations

import gymnasium as gym

from openenv_gym.catalog import EnvInfo, all_envs

__all__ = ["register_envs"]

ENV_ENTRY_POINT = "openenv_gym.client.env:RemoteEnv"
VECTOR_ENTRY_POINT = "openenv_gym.vector.env:RemoteVectorEnv"


def register_env(info: EnvInfo) -> None:
    """Register one catalog entry (no-op when the id is already registered)."""
    if info.gym_id in gym.registry:
        return
    gym.register(
        id=info.gym_id,
        entry_point=ENV_ENTRY_POINT,
        vector_entry_point=VECTOR_ENTRY_POINT,
        kwargs={"env": info.name},
        # Workers enforce episode limits themselves (Echo's max_steps, Gym-v0's TimeLimit).
        max_episode_steps=None,
        disable_env_checker=False,
        nondeterministic=info.nondeterministic,
    )


def register_envs() -> list[str]:
    """Register every built-in and plugin env with Gymnasium (``import openenv_gym`` calls it).

    Returns:
        The ids of every env in the catalog (already registered ones included).

    Example:
        >>> "OpenEnv/Echo-v0" in register_envs()   # import openenv_gym already did this
        True
    """
    envs = all_envs()
    for info in envs:
        register_env(info)
    return [info.gym_id for info in envs]
