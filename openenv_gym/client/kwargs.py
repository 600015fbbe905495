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

__all__ = ["merge_env_kwargs", "take_render_mode"]


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


def take_render_mode(env_kwargs: dict[str, Any], render_mode: str | None) -> str | None:
    """The render mode, also when it came in ``env_kwargs`` (taken out of them): the client
    must know it too, or ``render()`` would return None while the served env renders.

    Raises:
        InvalidRequestError: Given both ways, differently.

    Example:
        >>> kwargs = {"render_mode": "ansi", "max_steps": 3}
        >>> take_render_mode(kwargs, None), kwargs
        ('ansi', {'max_steps': 3})
    """
    if "render_mode" not in env_kwargs:
        return render_mode
    given = env_kwargs.pop("render_mode")
    if render_mode is not None and given != render_mode:
        raise InvalidRequestError(f"render_mode given twice: {render_mode!r}, and {given!r} in "
                                  "env_kwargs; give it once")
    return given
