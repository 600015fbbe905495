"""Gymnasium ids as ``gym.make`` resolves them: what Gym-v0's worker and the trainer that
starts it both ask (light: the trainer imports it, with no env contract or web stack)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, find_highest_version, get_env_id, parse_env_id

#: Top-level packages whose ids every worker has registered on its own (Gymnasium's on
#: ``import gymnasium``; openenv_gym's, which Gym-v0 refuses anyway, on its start).
_SELF_REGISTERED = frozenset({"gymnasium", "openenv_gym"})


def registered_spec(env_id: Any) -> EnvSpec | None:
    """The registry's spec ``gym.make(env_id)`` makes (``"module:Id"`` once the module is
    imported; an unversioned id's highest version), or None if there is none.

    Example:
        >>> registered_spec("CartPole").id
        'CartPole-v1'
    """
    if not isinstance(env_id, str):
        return None  # gym.make says what is wrong with it
    name = env_id.split(":")[-1]  # "openenv_gym:OpenEnv/Echo-v0": this worker registered it
    try:
        namespace, base, version = parse_env_id(name)
    except gym.error.Error:
        return None  # gym.make says what is wrong with it
    if version is None:  # an unversioned id means its highest version, as in gym.make
        version = find_highest_version(namespace, base)
    return gym.registry.get(get_env_id(namespace, base, version))


def importable_env_id(env_id: Any) -> Any:
    """``env_id`` in the ``"module:id"`` form that makes a worker import the module of its
    entry point first, when this process registered the id from a package a worker's
    Gymnasium does not load on its own (``import ale_py`` registers ``ALE/Pong-v5``).

    A worker is a fresh Python: without this, an id the trainer made locally after
    ``import ale_py`` was unknown there ("Namespace ALE not found"). Left as it is: an id
    that names its module already, one this process does not know, Gymnasium's own, and one
    whose entry point lives in ``__main__`` (which no worker can import).

    Example:
        >>> importable_env_id("CartPole-v1")
        'CartPole-v1'
    """
    if not isinstance(env_id, str) or ":" in env_id:
        return env_id
    spec = registered_spec(env_id)
    entry_point = getattr(spec, "entry_point", None)
    if isinstance(entry_point, str):
        module = entry_point.split(":")[0]
    else:  # a class or function registered directly
        module = getattr(entry_point, "__module__", None)
    if not module or module == "__main__" or module.split(".")[0] in _SELF_REGISTERED:
        return env_id
    return f"{module}:{env_id}"
