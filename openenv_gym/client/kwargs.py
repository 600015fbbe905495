"""The served env's constructor arguments, from keywords and an ``env_kwargs`` mapping.

A class that starts workers (:class:`~openenv_gym.vector.RemoteVectorEnv`,
:class:`~openenv_gym.trl.EnvPool`) takes the env's arguments as its own ``**kwargs``, so a
name it also takes itself (``step_timeout``: the worker deadline there, the sandbox's limit
in Coding and Git) reaches the env only through ``env_kwargs=``.

Example:
    >>> merge_env_kwargs({"step_timeout": 5}, {"task": "humaneval"})
    {'task': 'humaneval', 'step_timeout': 5}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv_gym.errors import InvalidRequestError

__all__ = ["merge_env_kwargs"]


def merge_env_kwargs(env_kwargs: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The env's arguments: ``kwargs`` and the mapping ``env_kwargs`` (None: none).

    Raises:
        InvalidRequestError: ``env_kwargs`` is not a mapping, or a name is given both ways.
    """
    if env_kwargs is not None and not isinstance(env_kwargs, Mapping):  # as provider_options
        raise InvalidRequestError(f"env_kwargs must be a dict of constructor arguments, got "
                                  f"{type(env_kwargs).__name__}")
    both = sorted(set(env_kwargs or ()) & set(kwargs))
    if both:
        raise InvalidRequestError(f"{', '.join(both)} given both as keyword and in env_kwargs; "
                                  "give each once")
    return {**kwargs, **(env_kwargs or {})}
