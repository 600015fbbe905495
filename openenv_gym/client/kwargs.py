"""The served env's constructor arguments, from keywords and an ``env_kwargs`` mapping.

A class that starts workers (:class:`~openenv_gym.vector.RemoteVectorEnv`,
:class:`~openenv_gym.trl.EnvPool`) takes the env's arguments as its own ``**kwargs``, so a
name it also takes itself (``step_timeout``: the worker deadline there, the sandbox's limit
in Coding and Git) reaches the env only through ``env_kwargs=``. A trainer's episode limit
becomes one of those arguments too (:func:`add_time_limit`; for ``gym.make``, whose limit
never reaches the env's constructor, :func:`gym_make_time_limit`).

Example:
    >>> merge_env_kwargs({"step_timeout": 5}, {"task": "humaneval"})
    {'task': 'humaneval', 'step_timeout': 5}
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openenv_gym._numbers import is_int
from openenv_gym._signature import did_you_mean, keyword_names
from openenv_gym.errors import InvalidRequestError, OpenEnvError

if TYPE_CHECKING:
    from gymnasium.envs.registration import EnvSpec

__all__ = ["merge_env_kwargs", "take_render_mode", "gym_make_time_limit", "add_time_limit",
           "keep_no_limit", "name_misplaced_timeout", "name_misspelt_keywords", "name_vector_keywords",
           "gym_make_shows_human", "NO_LIMIT"]

#: ``gym.make``'s ``max_episode_steps`` for no episode limit at all.
NO_LIMIT = -1
#: The one served argument that takes :data:`NO_LIMIT` (Gym-v0's, passed to its ``gym.make``).
_NO_LIMIT_KWARG = "max_episode_steps"


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


#: What each API calls its limit on one call's wait: a name that one takes, given to the other,
#: reaches the env, which refuses it as its own argument.
_CALL_TIMEOUT = {"gym.make": "timeout", "gym.make_vec": "step_timeout"}


def name_misplaced_timeout(exc: OpenEnvError, env_kwargs: Mapping[str, Any], maker: str) -> None:
    """Say in ``exc`` (the worker's refusal to make the env) that the timeout argument it
    refused is the other API's, when so: ``gym.make(..., step_timeout=5)`` was refused with
    only "unexpected keyword argument 'step_timeout'; it takes max_steps, ...".

    Only a refusal that names the argument as one the env does not take
    (:attr:`~openenv_gym.errors.InvalidRequestError.unknown_arguments`) gets the note, not an
    error whose message merely quotes such words (an env that takes ``step_timeout`` itself
    and failed on something else).

    Args:
        exc: The error starting the workers raised; changed in place.
        env_kwargs: The env's arguments as sent.
        maker: ``"gym.make"`` or ``"gym.make_vec"``, whose own name is the right one.
    """
    own = _CALL_TIMEOUT[maker]
    [(other, given)] = [(m, name) for m, name in _CALL_TIMEOUT.items() if m != maker]
    if given not in env_kwargs or given not in exc.unknown_arguments:
        return
    note = f"({given}= is {other}'s limit on each call's wait; {maker}'s is {own}=)"
    exc.args = (f"{exc}\n{note}",)  # the worker's own error type stays (an `except` still catches it)


def name_misspelt_keywords(exc: OpenEnvError, maker: str, cls: type) -> None:
    """Say in ``exc`` (the worker's refusal to make the env) which of the arguments it refused
    look like misspelt keywords of the maker's own: ``gym.make(..., provder="process")``
    reached the env and was refused with only "it takes max_steps, ...", which the worker,
    knowing nothing of ``gym.make``, could not relate to ``provider=``.

    Only arguments the refusal names (:attr:`~openenv_gym.errors.InvalidRequestError.unknown_arguments`)
    count, and not the other API's timeout name (:func:`name_misplaced_timeout` explains it).

    Args:
        exc: The error starting the workers raised; changed in place.
        maker: ``"gym.make"`` or ``"gym.make_vec"``.
        cls: The class it builds (``RemoteEnv``, ``RemoteVectorEnv``), whose keywords count too.
    """
    import gymnasium

    made_by = gymnasium.make if maker == "gym.make" else gymnasium.make_vec
    names = {*keyword_names(inspect.signature(cls).parameters.values()),
             *keyword_names(inspect.signature(made_by).parameters.values())} - {"id", "env"}
    other_timeout = next(name for m, name in _CALL_TIMEOUT.items() if m != maker)
    refused = [name for name in exc.unknown_arguments if name != other_timeout]
    # Closer than the worker's guesses among the env's own names: max_step= is Echo's max_steps=
    # misspelt far likelier than gym.make's max_episode_steps=.
    guess = did_you_mean([name for name in refused if name not in names], sorted(names), cutoff=0.75)
    notes = [f"did you mean {guess}? {maker} takes that itself"] if guess else []
    own = [f"{name}=" for name in refused if name in names]  # only env_kwargs= passes one on
    if own:
        notes.append(f"{', '.join(own)} {'is' if len(own) == 1 else 'are'} {maker}'s own: give "
                     f"{'it' if len(own) == 1 else 'them'} as a keyword, not in env_kwargs")
    if notes:
        exc.args = (f"{exc}\n({'; '.join(notes)})",)  # its type and fields stay


def name_vector_keywords(exc: OpenEnvError) -> None:
    """Say in ``exc`` (a single env's worker refusing its arguments) which of them are
    ``gym.make_vec``'s own (``envs_per_worker=``, ``on_worker_error=``): given to ``make_vec``
    with ``vectorization_mode="sync"`` or ``"async"`` (RLlib's default), each sub-env is a
    ``gym.make`` that passes them on to the env, which refused them with only "it takes
    max_steps, ...". (``step_timeout=`` has :func:`name_misplaced_timeout`'s note.)

    Args:
        exc: The error starting the worker raised; changed in place.
    """
    from openenv_gym.client.env import RemoteEnv
    from openenv_gym.vector.env import RemoteVectorEnv

    single = set(keyword_names(inspect.signature(RemoteEnv).parameters.values()))
    vector = keyword_names(inspect.signature(RemoteVectorEnv).parameters.values())
    given = [name for name in exc.unknown_arguments
             if name in vector and name not in single and name != _CALL_TIMEOUT["gym.make_vec"]]
    if given:
        names = ", ".join(f"{name}=" for name in given)
        exc.args = (f"{exc}\n({names} {'is' if len(given) == 1 else 'are'} gym.make_vec's own, with its "
                    "default vectorization_mode; with vectorization_mode='sync' or 'async' each env "
                    "is made by gym.make, which passes on the env's arguments only)",)


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


def gym_make_time_limit(env: object) -> int | None:
    """The episode limit of the ``TimeLimit`` that the ``gym.make`` call now building ``env``
    (from its constructor) wraps around it: ``gym.make``'s ``max_episode_steps``, else the
    given spec's; :data:`NO_LIMIT` (-1) when ``gym.make`` was asked for none, which locally
    removes the env's own limit too; None when there is none, or when ``gym.make`` is not
    what called ``env``'s constructor.

    ``gym.make`` keeps ``max_episode_steps`` for that wrapper and never passes it on, while a
    served env may have a limit of its own (Gym-v0's inner ``TimeLimit``: CartPole-v1's 500;
    Echo's ``max_steps``) that ends longer episodes first, where locally
    ``gym.make("CartPole-v1", max_episode_steps=1000)`` runs to 1000. Gymnasium offers no other
    way to learn it in time (an ``additional_wrappers`` hook would run after the worker
    started, and ``make_vec`` refuses such a spec), so its frame is read: the local names are
    its documented parameter and the spec it wraps by. Anything else finds nothing, and the
    served env keeps its own limit, as before (``tests/client/test_gym_make_time_limit.py``
    fails if a Gymnasium release changes this).

    Args:
        env: The env whose ``__init__`` (or a subclass's, calling it) is running.

    Example:
        >>> gym_make_time_limit(object()) is None   # not built by gym.make
        True
    """
    frame = _gym_make_frame(env)
    if frame is None:
        return None
    steps = frame.f_locals.get("max_episode_steps")
    if is_int(steps, NO_LIMIT, NO_LIMIT):
        return NO_LIMIT
    if steps is None:
        steps = getattr(frame.f_locals.get("env_spec"), "max_episode_steps", None)
    return int(steps) if is_int(steps, 1) else None


def gym_make_shows_human(env: object) -> bool:
    """Whether the ``gym.make`` call now building ``env`` was asked for ``render_mode="human"``
    and passed ``"rgb_array"`` on instead, to show those frames in a window of its own
    (Gymnasium's ``HumanRendering``; read off its frame as :func:`gym_make_time_limit` reads
    its limit): a refusal of that mode is then of a mode the caller never gave.

    Args:
        env: The env whose ``__init__`` (or a subclass's, calling it) is running.

    Example:
        >>> gym_make_shows_human(object())   # not built by gym.make
        False
    """
    frame = _gym_make_frame(env)
    return frame is not None and frame.f_locals.get("apply_human_rendering") is True


def _gym_make_frame(env: object) -> Any:
    """The frame of the ``gym.make`` call whose env creator is ``env``'s ``__init__``, or None."""
    from gymnasium.envs.registration import make

    frame = sys._getframe(2)  # the caller of gym_make_time_limit / gym_make_shows_human
    # Past env's own constructors (a subclass's __init__ calling its base's) to their caller.
    while frame is not None and frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is env:
        frame = frame.f_back
    return frame if frame is not None and frame.f_code is make.__code__ else None


def add_time_limit(env_kwargs: dict[str, Any], time_limit_kwarg: str | None, steps: int | None) -> None:
    """Give the served env ``steps`` as its own episode limit, through its constructor argument
    ``time_limit_kwarg`` (the catalog's: Gym-v0's ``max_episode_steps``, Echo's ``max_steps``),
    unless the caller gave that argument itself. Its own limit (CartPole's 500) would otherwise
    end episodes before the trainer's ``steps`` do. :data:`NO_LIMIT` reaches only an argument
    named ``max_episode_steps``, ``gym.make``'s own (Gym-v0's, which passes it to its
    ``gym.make``), where it means no limit as it does locally; any other (Echo's ``max_steps``
    takes no value for none) keeps the env's own limit.

    Args:
        env_kwargs: The served env's arguments (changed in place).
        time_limit_kwarg: The argument, or None for an env without a limit of its own.
        steps: The limit (None: none asked for; :data:`NO_LIMIT`: no limit at all).

    Example:
        >>> kwargs = {"env_id": "CartPole-v1"}
        >>> add_time_limit(kwargs, "max_episode_steps", 1000)
        >>> kwargs
        {'env_id': 'CartPole-v1', 'max_episode_steps': 1000}
    """
    if steps is None or not time_limit_kwarg:
        return
    if steps == NO_LIMIT and time_limit_kwarg != _NO_LIMIT_KWARG:
        return
    env_kwargs.setdefault(time_limit_kwarg, steps)


def keep_no_limit(spec: EnvSpec, time_limit_kwarg: str | None) -> EnvSpec:
    """``spec``, of an env made with ``max_episode_steps=-1``, with that -1 among its kwargs
    where the served env took it (:func:`add_time_limit`), so that ``gym.make(spec)`` serves it
    without a limit again. ``gym.make``'s spec keeps no trace of a -1 (its ``max_episode_steps``
    is None): a local env made again from it has no ``TimeLimit``, where the served env got its
    own back (MountainCar-v0's 200).

    Args:
        spec: The spec of an env (or sub-env) made with :data:`NO_LIMIT`.
        time_limit_kwarg: The served env's limit argument (the catalog's).

    Returns:
        The spec, with ``time_limit_kwarg=-1`` in its kwargs where that argument takes it and
        the caller did not give it.
    """
    given = {**spec.kwargs, **(spec.kwargs.get("env_kwargs") or {})}
    if time_limit_kwarg != _NO_LIMIT_KWARG or time_limit_kwarg in given:
        return spec
    return dataclasses.replace(spec, kwargs={**spec.kwargs, time_limit_kwarg: NO_LIMIT})
