"""The server-side environment contract every openenv_gym environment implements.

An :class:`Environment` is a :class:`gymnasium.Env` that runs inside a worker, plus three
things a remote env needs: typed action/observation models (optional: numeric envs
declare spaces directly), :meth:`Environment.parse_action` to validate what arrives over
the wire, and :meth:`Environment.state` for ``GET /state``.

Example:
    >>> from pydantic import Field
    >>> from openenv_gym.models import Action, Observation
    >>> class Say(Action):
    ...     message: str = Field(max_length=64)
    >>> class Heard(Observation):
    ...     text: str = Field(max_length=64)
    >>> class Parrot(Environment):
    ...     action_model, observation_model = Say, Heard
    ...     def reset(self, *, seed=None, options=None):
    ...         super().reset(seed=seed)
    ...         return Heard(text=""), {}
    ...     def step(self, action):
    ...         return Heard(text=action.message), 0.0, False, False, {}
    >>> env = Parrot()
    >>> env.step(env.parse_action({"message": "hi"}))[0].text
    'hi'
"""

from __future__ import annotations

from typing import Any, ClassVar

import annotated_types
import gymnasium as gym
import numpy as np
from pydantic import BaseModel, ValidationError
from pydantic.types import AllowInfNan, Strict

from openenv_gym.errors import InvalidActionError
from openenv_gym.models import Action, Observation, State, model_space
from openenv_gym.protocol.slices import valid_rows
from openenv_gym.protocol.wire import wire_problem
from openenv_gym.spaces import from_wire, not_in_space, short_repr

__all__ = ["Environment"]


class Environment(gym.Env):
    """Base class of environments served by an openenv_gym worker.

    Subclasses implement ``reset`` and ``step`` as in Gymnasium. They either set
    ``action_model``/``observation_model`` (pydantic models; the spaces are derived) or
    assign ``action_space``/``observation_space`` in ``__init__``. ``step`` receives the
    parsed action: a model instance for model envs, a space value otherwise. Observations
    may be returned as model instances or as space values.

    Args:
        render_mode: One of ``metadata["render_modes"]`` or None.

    Example:
        >>> from openenv_gym.envs.echo.env import EchoEnv   # a model env: spaces derived
        >>> env = EchoEnv()
        >>> _ = env.reset(seed=0)
        >>> env.step(env.parse_action({"message": "hi"}))[:2]
        (EchoObservation(echo='hi', length=2), 0.2)
    """

    #: Pydantic model of an action; when set, ``action_space`` is derived from it.
    action_model: ClassVar[type[Action] | None] = None
    #: Pydantic model of an observation; when set, ``observation_space`` is derived from it.
    observation_model: ClassVar[type[Observation] | None] = None
    # Whether an env runs untrusted code is its catalog entry's fact (``EnvInfo.untrusted``):
    # the trainer decides isolation before any env code is imported, so it cannot be a
    # class attribute here.
    #: The plain infos every step reports, key -> ``"int"``, ``"float"`` or ``"bool"`` (as
    #: EnvPool's info spec). A vector env then carries them in shared columns instead of
    #: messages; an info that differs (other keys or types) still arrives, inline.
    info_types: ClassVar[dict[str, str]] = {}
    #: Whether a ``Box`` action must lie within the bounds. Off for an env that takes any
    #: finite action of the right shape and clips it or lets it act (Gym-v0: the served env
    #: decides, as Pendulum clips a local torque of 5); NaN and inf are refused either way.
    enforce_action_bounds: ClassVar[bool] = True
    #: Whether the server refuses an observation outside ``observation_space`` (checked on
    #: reset and each episode's first step, as Gymnasium's env checker). Off for Gym-v0,
    #: whose served env is checked as locally: not at all, since the checker only warns.
    check_observations: ClassVar[bool] = True
    #: Longest a step may take by the env's own limits (Coding's ``max_timeout``; Git's plus its checks'),
    #: in seconds; None: short. Clients wait that long plus a margin before they give a
    #: worker up (:func:`~openenv_gym.client.spec.call_timeout`).
    max_step_seconds: float | None = None
    #: Whether each step's reward scores where the episode stands (Git's fraction of checks
    #: passing, Coding's rating of the program just run) instead of adding to a return: an
    #: episode is then worth its last reward, and summing them pays an agent for lingering.
    #: :class:`~openenv_gym.trl.EnvPool`'s default ``reward_mode`` follows it.
    reward_is_score: bool = False
    #: The step count at which the env truncates an episode on its own (Gym-v0: its
    #: ``TimeLimit``'s; Echo: ``max_steps``), None for none: a single env's client shows it
    #: as ``env.spec.max_episode_steps``, as a local env's ``TimeLimit`` shows its own.
    episode_limit: int | None = None
    #: The return at which the env counts as solved (Gym-v0: its ``EnvSpec``'s, CartPole-v1's
    #: 475), None for none: a single env's client shows it as ``env.spec.reward_threshold``.
    reward_threshold: float | None = None
    metadata: dict[str, Any] = {"render_modes": []}
    #: The Gymnasium env this one serves, for envs that wrap one (``Gym-v0``, ``Atari-v0``):
    #: a vector env's ``get_attr``/``set_attr``/``call`` then reach it, as they reach the
    #: env itself locally (``env.get_attr("gravity")`` on CartPole).
    inner: gym.Env | None = None

    def __init__(self, render_mode: str | None = None) -> None:
        if self.action_model is not None:
            self.action_space = model_space(self.action_model)
        if self.observation_model is not None:
            self.observation_space = model_space(self.observation_model)
        if render_mode is not None and render_mode not in self.metadata.get("render_modes", []):
            raise ValueError(f"render_mode={render_mode!r} is not one of "
                             f"{self.metadata.get('render_modes', [])}")
        self.render_mode = render_mode

    def parse_action(self, raw: Any) -> Any:
        """Validate an action as decoded from the wire and return what ``step`` receives.

        Args:
            raw: The decoded action (a dict for model envs, a number/array/... otherwise).

        Returns:
            A model instance (model envs) or a value contained in ``action_space``; for an
            env that does not enforce its Box's bounds (:attr:`enforce_action_bounds`), any
            finite array or list of numbers of the space's shape, as it was sent.

        Raises:
            InvalidActionError: The action does not fit; the message names the problem.
        """
        if self.action_model is not None:
            if isinstance(raw, BaseModel):
                raw = raw.model_dump()
            if not isinstance(raw, dict):
                fields = ", ".join(self.action_model.model_fields)
                raise InvalidActionError(
                    f"action must be a mapping with fields ({fields}), got {type(raw).__name__}"
                )
            try:
                return self.action_model.model_validate(raw)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'action'}: {e['msg']}" for e in exc.errors()
                )
                raise InvalidActionError(f"invalid {self.action_model.__name__}: {problems}") from None
        space = self.action_space
        if not self.enforce_action_bounds and isinstance(space, gym.spaces.Box):
            # The served env decides, as locally: any finite array of the right shape, in
            # the dtype it came in (a float64 action rounded to the space's float32 would
            # change its dynamics; wire arrays are read-only views of the frame: copied), or
            # a list of numbers (or a shape-() Box's number) handed over as it is (a local
            # env computes with its Python floats: MountainCarContinuous in float32 beside
            # its state, where np.float64 would turn the sum float64).
            if isinstance(raw, np.ndarray) and raw.dtype.kind in "fiu":
                value = array = raw.copy()
            elif (array := _numbers(raw)) is not None:
                value = raw
            else:
                value = from_wire(raw, space)  # an array, or what cannot be one (for contains)
                array = value if isinstance(value, (np.ndarray, np.generic)) else None
            # The rule a vector slice checks its rows by (``valid_rows``, bounds off).
            if array is not None and array.shape == space.shape and array.dtype.kind in "fiu" \
                    and valid_rows(space, array.reshape(1, -1), bounds=False)[0]:
                return value
        else:
            value = from_wire(raw, space)
        if not space.contains(value):
            raise InvalidActionError(not_in_space(value, self.action_space, raw))
        return value

    def action_check(self) -> str | None:
        """Which check of :meth:`parse_action` a vector client may run on each env's action
        before it sends a batch (spec key ``action_check``), so that a batch with one bad
        text or mapping action steps no env at all.

        Returns:
            ``"schema"``: pydantic's validation against ``action_schema`` refuses nothing this
            env takes (a plain model: no aliases, no validator that runs before the type
            check, no lenient config); ``"space"``: ``action_space.contains`` of the value
            as received is this env's check; None: only this env can tell (an env with a
            ``parse_action`` of its own, or a model with such features).
        """
        if type(self).parse_action is not Environment.parse_action:
            return None
        if self.action_model is None:
            return "space"
        try:
            return "schema" if _plain_model(self.action_model) else None
        except Exception:  # noqa: BLE001 - pydantic internals moved: the worker checks alone, as before
            return None

    def get_wrapper_attr(self, name: str) -> Any:
        """An attribute of the served env: ours where the client sees ours (the spaces,
        metadata and render mode it was given, our own instance attributes such as
        ``env_id``), else :attr:`inner`'s (through its wrappers), else ours.

        The inner env comes before our class so that the rest is the served env's, as it is
        locally: CartPole's ``state`` and ``gravity``, Gymnasium's ``np_random_seed``.
        ``spec`` and ``unwrapped`` stay ours (an ``EnvSpec`` cannot cross the wire).

        Raises:
            AttributeError: Neither has it.
        """
        if self.inner is not None and name not in vars(self) and name not in _CLIENT_VIEW:
            try:
                return self.inner.get_wrapper_attr(name)
            except AttributeError:
                pass
        return getattr(self, name)

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        """Set an attribute where :meth:`get_wrapper_attr` reads it (ours, else the inner env's).

        Returns:
            Whether it was set (``force``: create it on the innermost env that has none).
        """
        if self.inner is None or name in vars(self) or name in _CLIENT_VIEW:
            done = super().set_wrapper_attr(name, value, force=force)
            if self.inner is not None:  # a copy we keep of the inner env's (its spaces): keep both equal
                self.inner.set_wrapper_attr(name, value, force=False)
            return done
        return self.inner.set_wrapper_attr(name, value, force=force)

    def np_random_call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` of the served env's ``np_random`` (the inner env's, for an env that
        wraps one): what a trainer-side wrapper's ``env.np_random.<method>(...)`` runs, so
        its draws advance the same Generator the env's resets and steps draw from, as locally.

        Raises:
            AttributeError: ``method`` is no public method of a Generator.
        """
        rng = self.get_wrapper_attr("np_random")
        target = getattr(rng, method, None) if not method.startswith("_") else None
        if not callable(target):
            raise AttributeError(f"np_random has no public method {method!r}")
        return target(*args, **kwargs)

    def check_output(self, call: str, obs: Any, info: Any, ended: bool = False) -> None:
        """Refuse what ``reset``/``step`` returned that no client could use, naming it.

        The server calls it on each reset and each episode's first step (as Gymnasium's env
        checker does), and on any step whose info is not a dict; a later step's unsendable
        info is named when its reply fails to encode, so steps pay no walk.

        Args:
            call: ``"reset"`` or ``"step"``.
            obs: The observation, as it crosses the wire.
            info: The info dict.
            ended: The step ended the episode (said in the message: it did happen).

        Raises:
            TypeError: The info is not a dict, or holds a value the wire cannot carry.
            ValueError: The observation is not in :attr:`observation_space`
                (:attr:`check_observations`).
        """
        kind: type[Exception] = TypeError
        if not isinstance(info, dict):
            problem = f"an info of type {type(info).__name__} (return {{}} for none)"
        else:
            problem = wire_problem(info, "info") if info else None
        if problem is None and self.check_observations \
                and not self.observation_space.contains(from_wire(obs, self.observation_space, copy=False)):
            kind = ValueError
            problem = f"an observation outside its observation space {self.observation_space}: {short_repr(obs, 120)}"
        if problem is None:
            return
        done = "" if call != "step" else " The step itself happened" + (
            " and ended the episode: call reset." if ended else ".")
        raise kind(f"the env's {call}() returned {problem}; an info is a dict of numbers, str, "
                   f"bytes, lists, dicts and numpy arrays, an observation lies in the declared "
                   f"space.{done}")

    def observation_to_wire(self, obs: Any) -> Any:
        """Turn an observation into what crosses the wire (model instances become dicts)."""
        return obs.model_dump() if isinstance(obs, BaseModel) else obs

    def state(self) -> State:
        """Env-specific state for ``GET /state``; the server adds episode id and step count.

        Returns:
            A :class:`~openenv_gym.models.State` (subclasses add fields).
        """
        return State()


#: What the client was given of an env that wraps one (its spec message), and the attribute
#: routing itself (``call("get_wrapper_attr", name)``): answered by the wrapper, not the inner env.
_CLIENT_VIEW = frozenset({"metadata", "action_space", "observation_space", "render_mode", "spec",
                          "unwrapped", "get_wrapper_attr", "set_wrapper_attr"})


#: Field constraints the JSON schema shows exactly (or that only make the worker stricter:
#: ``Strict`` and ``AllowInfNan``, which a schema marked ``STRICT_SCHEMA_KEY`` shows too).
_PLAIN_METADATA = (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt,
                   annotated_types.MinLen, annotated_types.MaxLen, annotated_types.MultipleOf, Strict,
                   AllowInfNan)
#: Model config keys that never make validation take more than the schema says.
_PLAIN_CONFIG = frozenset({"extra", "title", "json_schema_extra", "frozen", "validate_assignment",
                           "validate_default", "use_attribute_docstrings", "protected_namespaces",
                           "defer_build", "strict", "str_max_length", "str_min_length",
                           "hide_input_in_errors", "revalidate_instances"})


def _plain_model(model: type[BaseModel]) -> bool:
    """Whether a model, rebuilt from its JSON schema, refuses nothing the model takes."""
    if set(model.model_config) - _PLAIN_CONFIG:
        return False  # coerce_numbers_to_str, str_strip_whitespace, populate_by_name, ...
    for field in model.model_fields.values():
        if field.alias is not None or field.validation_alias is not None:
            return False
        if not all(isinstance(m, _PLAIN_METADATA) for m in field.metadata):
            return False  # StringConstraints(strip_whitespace=True, ...), allow_inf_nan, ...
    decorators = model.__pydantic_decorators__
    if decorators.validators or decorators.root_validators:  # pydantic v1 style: may coerce
        return False
    # An "after" validator only refuses more (Git's NUL rule); "before", "wrap" and "plain"
    # ones may turn what the schema refuses into a value the model takes.
    return all(d.info.mode == "after" for d in
               (*decorators.field_validators.values(), *decorators.model_validators.values()))


def _numbers(raw: Any) -> np.ndarray | None:
    """numpy's array of ``raw`` when it is a number (Python's or numpy's int or float) or a
    list or tuple of numbers (nested); None otherwise (ragged, text, bools, anything else)."""
    if not isinstance(raw, (list, tuple, int, float, np.generic)):
        return None
    try:
        array = np.asarray(raw)
    except (ValueError, TypeError):  # ragged, or not numbers at all
        return None
    return array if array.dtype.kind in "fiu" else None


