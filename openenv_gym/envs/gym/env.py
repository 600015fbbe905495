"""Serve any installed Gymnasium env: a remote ``Gym-v0`` behaves exactly as the local one.

Example:
    >>> env = GymEnv(env_id="CartPole-v1")
    >>> obs, info = env.reset(seed=1)
    >>> obs.shape
    (4,)
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from openenv_gym._gym_ids import registered_spec
from openenv_gym._numbers import is_int
from openenv_gym._signature import keyword_names, takes_any_keyword
from openenv_gym.envs.base import Environment
from openenv_gym.errors import InvalidRequestError
from openenv_gym.models import State
from openenv_gym.registration import ENV_ENTRY_POINT

__all__ = ["GymEnv"]


class GymEnv(Environment):
    """Wraps ``gym.make(env_id, **kwargs)``; spaces, metadata and dynamics are the inner env's.

    Args:
        env_id: Any id registered in the worker's Gymnasium (``"CartPole-v1"``), or
            ``"module:id"`` to import the module that registers it first (the trainer's
            provider names the module of an id its own process registered that way).
        render_mode: Passed to ``gym.make``.
        info_types: The plain infos the env reports every step, key -> ``"int"``,
            ``"float"`` or ``"bool"`` (MuJoCo's ``{"x_position": "float", ...}``): a vector env
            then carries them in shared memory (see :attr:`Environment.info_types`).
        **kwargs: Passed to ``gym.make`` (``max_episode_steps``, env arguments; and
            ``disable_env_checker``, off by default, which reaches the worker through
            ``env_kwargs=``: the trainer's ``gym.make`` takes that name for itself).

    Raises:
        InvalidRequestError: ``env_id`` names an ``OpenEnv/*`` env, which is served remotely
            itself: make that id directly instead; or ``id`` is among ``kwargs`` (the served
            env's id is ``env_id``).
    """

    enforce_action_bounds = False  # the served env decides, as it does locally
    check_observations = False

    def __init__(self, env_id: str = "CartPole-v1", render_mode: str | None = None,
                 info_types: dict[str, str] | None = None, **kwargs: Any) -> None:
        if info_types:
            self.info_types = info_types  # the served env's own declaration, checked at start
        if render_mode is not None:  # as locally: an env without the argument is made without it
            kwargs["render_mode"] = render_mode
        # The trainer's gym.make already checks the env it hands over; a caller who asks for
        # the checker in the worker too (disable_env_checker=False) gets it.
        kwargs.setdefault("disable_env_checker", True)
        _refuse_served_env(env_id)
        if "id" in kwargs:  # gym.make's own first argument: it would take this one twice
            raise InvalidRequestError(
                f"id={kwargs['id']!r}: OpenEnv/Gym-v0 takes the id of the env it serves as "
                f"env_id; pass env_id={kwargs['id']!r} instead")
        try:
            self.inner = gym.make(env_id, **kwargs)
        except TypeError as exc:
            # Gymnasium's TypeError, as locally, naming the arguments as the other envs'
            # refusals do (the client acts on them: make_vec's step_timeout= given to gym.make).
            exc.unknown_arguments = tuple(_unknown_arguments(env_id, kwargs))  # type: ignore[attr-defined]
            raise
        except (gym.error.NamespaceNotFound, gym.error.NameNotFound) as exc:
            if ":" in str(env_id):  # (a missing version of a known id is not this)
                raise
            # Registered by the trainer's own module, the id is unknown here: the worker
            # imports that module only when the id names it, as gym.make's "module:id" does.
            raise type(exc)(f"{exc} If a module of yours registers it, name that module in the "
                            f"id, as gym.make takes it: env_id='your_module:{env_id}'") from exc
        self.metadata = dict(self.inner.metadata)
        limit = getattr(self.inner.spec, "max_episode_steps", None)  # None after gym.make's -1
        self.episode_limit = limit if is_int(limit, 1) else None
        self.reward_threshold = getattr(self.inner.spec, "reward_threshold", None)
        self.action_space = self.inner.action_space
        self.observation_space = self.inner.observation_space
        super().__init__()
        # Not checked against the served env's metadata: gym.make above took the mode, as it
        # does locally for one the metadata leaves out (a warning only; the env renders).
        self.render_mode = render_mode
        self.env_id = env_id

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return self.inner.reset(seed=seed, options=options)

    def step(self, action: Any):
        return self.inner.step(action)

    def render(self) -> Any:
        return self.inner.render()

    def close(self) -> None:
        self.inner.close()

    def state(self) -> State:
        return State(env_id=self.env_id)


def _refuse_served_env(env_id: Any) -> None:
    """Refuse an id whose env is itself a remote one (``"OpenEnv/Echo-v0"``): made here, it
    would start workers of its own from inside this worker, on a provider the caller never
    chose (Docker containers behind a ``provider="process"`` env)."""
    spec = registered_spec(env_id)
    if spec is not None and spec.entry_point == ENV_ENTRY_POINT:
        raise InvalidRequestError(
            f"env_id={env_id!r} is an openenv_gym env, served remotely itself: make it directly, "
            f"gym.make({spec.id!r}, provider=...), not through OpenEnv/Gym-v0")


def _unknown_arguments(env_id: str, kwargs: dict[str, Any]) -> list[str]:
    """The arguments of ``kwargs`` the env's creator takes none of; [] when it takes any
    keyword, or its signature cannot be read (gym.make's own arguments, which it does not
    pass on, are never among them)."""
    spec = registered_spec(env_id)
    try:
        creator = load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) else spec.entry_point
        parameters = inspect.signature(creator).parameters.values()
    except Exception:  # no spec, an entry point that will not load or has no signature
        return []
    if takes_any_keyword(parameters):
        return []
    taken = keyword_names(parameters)
    return [name for name in kwargs if name not in taken and name not in _MAKE_OWN]


#: gym.make's own keywords (and render_mode, which it handles for an env without one).
_MAKE_OWN = frozenset(inspect.signature(gym.make).parameters) | {"render_mode"}
