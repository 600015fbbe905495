"""What a worker's ``spec`` reply means on the client side: spaces and servable metadata.

Example:
    >>> from gymnasium import spaces
    >>> from openenv_gym.protocol.wire import PROTOCOL_VERSION
    >>> from openenv_gym.spaces import space_to_dict
    >>> spec = {"protocol": PROTOCOL_VERSION, "env": "gym", "observation_space": space_to_dict(spaces.Discrete(3)),
    ...         "action_space": space_to_dict(spaces.Discrete(2)),
    ...         "metadata": {"render_modes": ["human", "rgb_array"]}}
    >>> observation_space, action_space, metadata = read_spec(spec)
    >>> action_space, metadata["render_modes"]
    (Discrete(2), ['rgb_array'])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from openenv_gym._numbers import is_finite
from openenv_gym.errors import InvalidRequestError, ProtocolError
from openenv_gym.protocol.wire import PROTOCOL_VERSION
from openenv_gym.spaces import space_from_dict

__all__ = ["read_spec", "call_timeout", "with_served_values", "DEFAULT_TIMEOUT"]

#: Seconds a worker call may take when the caller sets none and the env declares no long step.
DEFAULT_TIMEOUT = 60.0
#: What a call may take beyond the longest step the env declares (grading, replies).
_MARGIN = 30.0
#: The longest deadline a socket takes (``settimeout`` overflows past ~9.2e9 s): a year.
MAX_TIMEOUT = 365 * 24 * 3600.0


def call_timeout(spec: dict[str, Any], given: float | None, name: str = "timeout") -> float:
    """The deadline for a worker call: ``given``, else :data:`DEFAULT_TIMEOUT` raised above
    the longest step the env declares (``max_step_seconds``: Git's is 190 s, its 120 s ``max_timeout`` and its checks),
    so the env's own limit ends a slow step, not the client giving the worker up.

    Args:
        spec: A worker's ``spec`` (``{}`` before one is known).
        given: The caller's deadline, or None.
        name: The caller's name for ``given``, for the error.

    Raises:
        InvalidRequestError: ``given`` is not a positive number of seconds.

    Example:
        >>> call_timeout({}, None), call_timeout({"max_step_seconds": 120.0}, None)
        (60.0, 150.0)
        >>> call_timeout({"max_step_seconds": 120.0}, 5)
        5.0
    """
    if given is not None:
        # is_finite takes numpy scalars too (a value read from a config array).
        if not (is_finite(given) and 0 < given <= MAX_TIMEOUT):
            raise InvalidRequestError(f"{name} must be a positive number of seconds, finite and at "
                                      f"most {MAX_TIMEOUT:.0f} (a year), or None, got {given!r}")
        return float(given)
    longest = spec.get("max_step_seconds")
    if longest is None:
        return DEFAULT_TIMEOUT
    longest = float(longest)
    if not math.isfinite(longest):
        return MAX_TIMEOUT
    return max(DEFAULT_TIMEOUT, min(longest + _MARGIN, MAX_TIMEOUT))


def with_served_values(spec: EnvSpec, served: Mapping[str, Any], *, limit: bool = True) -> EnvSpec:
    """``spec`` with the served env's own ``max_episode_steps`` and ``reward_threshold`` where it
    has none: the served env applies its limit (so ``gym.make`` wraps no ``TimeLimit`` of its
    own), and a spec should show it as a local env's does (CartPole-v1's 500 and 475).

    Args:
        spec: The ``EnvSpec`` ``gym.make`` (or ``make_vec``, for a sub-env) made.
        served: The worker's ``spec`` reply (``{}`` before one is known).
        limit: Whether to fill in the limit; False for an env made with ``max_episode_steps=-1``.

    Returns:
        The spec, or a copy with the served values filled in.

    Example:
        >>> spec = with_served_values(EnvSpec("OpenEnv/Gym-v0"),
        ...                           {"max_episode_steps": 500, "reward_threshold": 475.0})
        >>> spec.max_episode_steps, spec.reward_threshold
        (500, 475.0)
    """
    changes: dict[str, Any] = {}
    if limit and spec.max_episode_steps is None and served.get("max_episode_steps") is not None:
        changes["max_episode_steps"] = served["max_episode_steps"]
    if spec.reward_threshold is None and served.get("reward_threshold") is not None:
        changes["reward_threshold"] = served["reward_threshold"]
    return dataclasses.replace(spec, **changes) if changes else spec


def read_spec(spec: dict[str, Any]) -> tuple[spaces.Space, spaces.Space, dict[str, Any]]:
    """The single env's spaces and metadata from a worker's ``spec`` reply.

    Args:
        spec: The ``spec`` field of the reply.

    Returns:
        Observation space, action space, and the env's metadata with the render modes a
        worker can serve (not ``"human"``: a worker has no display) and ``openenv_env``.

    Raises:
        ProtocolError: The server speaks another protocol version.
    """
    if spec.get("protocol") != PROTOCOL_VERSION:
        # An older or newer server (one attached by address, a Ray node on another version)
        # would fail on the first message it cannot read ("unknown msgpack extension type").
        from openenv_gym import __version__  # noqa: PLC0415  (late: this module loads with the package)

        theirs = f" (openenv-gym {spec['version']})" if "version" in spec else ""
        raise ProtocolError(
            f"the env server speaks protocol {spec.get('protocol')!r}{theirs} and this client "
            f"protocol {PROTOCOL_VERSION} (openenv-gym {__version__}): run the same openenv-gym "
            "version on both sides: restart a server started by hand (`openenv-gym serve`) with "
            "this version; images built by the docker provider rebuild themselves, but a custom "
            "image (provider_options['image']) must be rebuilt FROM the image `openenv-gym build "
            "ENV` makes now")
    metadata = dict(spec.get("metadata", {}))
    if "render_modes" in metadata:  # an env that declares none is left so (checks only warn)
        metadata["render_modes"] = [m for m in metadata["render_modes"] if m != "human"]
    metadata["openenv_env"] = spec["env"]
    return (space_from_dict(spec["observation_space"]), space_from_dict(spec["action_space"]),
            metadata)
