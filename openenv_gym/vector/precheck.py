"""The trainer's check of text and mapping actions before a vector step sends any of them.

Array actions (Discrete, MultiDiscrete, MultiBinary, Box) are checked for the whole batch by
:class:`~openenv_gym.vector.actions.BatchActions`. The other actions (Echo's, Coding's and Git's
pydantic models; a ``Gym-v0`` env's Text, Dict or Tuple) are checked here, one env at a
time, with the rule their worker applies — so that a batch in which one env's action is bad
steps no env, instead of stepping the others and losing their rewards and episode ends.

The worker says which rule that is, in its spec's ``action_check``
(:meth:`openenv_gym.envs.base.Environment.action_check`):

- ``"schema"``: pydantic's validation of the action model, rebuilt here from the spec's
  ``action_schema`` (types, lengths, bounds, required and unknown fields; a field the schema
  marks :data:`~openenv_gym._numbers.STRICT_SCHEMA_KEY`, as Coding's and Git's ``timeout``,
  strictly: no ``"1"`` or ``True`` for a number, and a finite one). Validators the schema does
  not show (Git's NUL rule) only make the worker stricter: it still checks them.
- ``"space"``: ``action_space.contains`` of the value as the worker reads it
  (:func:`~openenv_gym.spaces.from_wire` after the wire's own conversions).

Anything else (an env with a ``parse_action`` of its own, a worker that predates the key):
no check here, the worker's is the only one.

Example:
    >>> from gymnasium import spaces
    >>> check = action_checker({"action_check": "space"}, spaces.Text(4))
    >>> check("abc") is None, check("abcdef")
    (True, "action 'abcdef' is not in the action space Text(1, 4, charset=...)")
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from openenv_gym._numbers import STRICT_SCHEMA_KEY
from openenv_gym.protocol import wire
from openenv_gym.spaces import from_wire, not_in_space

__all__ = ["action_checker"]

#: What a value is after the wire, for these types: itself (msgpack carries them as they are).
_AS_IS = frozenset({str, int, float, bool, type(None)})

_TYPES: dict[str, type] = {"string": str, "number": float, "integer": int, "boolean": bool}
#: JSON-schema constraint -> pydantic ``Field`` argument (those pydantic itself writes).
_CONSTRAINTS = {"maxLength": "max_length", "minLength": "min_length", "minimum": "ge",
                "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt"}


def action_checker(spec: dict[str, Any], space: spaces.Space) -> Callable[[Any], str | None] | None:
    """The check of one env's action the worker's spec allows, or None.

    Returns:
        A function of an action that returns None when the worker takes it, else why it
        does not (the worker's own wording); None when the trainer cannot tell.
    """
    kind = spec.get("action_check")
    if kind == "schema":
        model = _model_of(spec.get("action_schema"))
        return None if model is None else _schema_check(model)
    if kind == "space":
        return _space_check(space)
    return None


def as_sent(value: Any) -> Any:
    """``value`` as the worker decodes it: str subclasses as str, sets as lists, an
    ``IntEnum`` as its int, ... (one trip through the wire); values the wire hands over as
    they are (plain values, numeric arrays, numpy numbers, and dicts, lists and tuples of
    them: protocol 2 keeps numpy scalars and tuples) without the trip.

    A value the wire cannot carry is returned as it is: sending it fails later, before
    anything is sent, with the wire's own error.
    """
    if _kept(value):
        return value
    try:
        return wire.decode(wire.encode(value)[wire.HEADER.size:])
    except Exception:  # noqa: BLE001 - the send names the problem
        return value


def _kept(value: Any, depth: int = 0) -> bool:
    """Whether the wire hands ``value`` over as it is (as far as a check can tell): ~0.5 µs
    for a Dict action of arrays, where the trip through the wire took ~5 µs per env."""
    kind = type(value)
    if kind in _AS_IS:
        return True
    if kind is np.ndarray:
        return not value.dtype.hasobject
    if isinstance(value, np.generic):
        return value.dtype.kind in "biufc"  # numbers and bools (a string scalar takes the trip)
    if depth >= 8:
        return False
    if kind is dict:
        return all(type(k) is str and _kept(v, depth + 1) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_kept(v, depth + 1) for v in value)
    return False


def _space_check(space: spaces.Space) -> Callable[[Any], str | None]:
    def check(action: Any) -> str | None:
        value = from_wire(as_sent(action), space, copy=False)
        return None if space.contains(value) else not_in_space(value, space, action)
    return check


def _schema_check(model: type[BaseModel]) -> Callable[[Any], str | None]:
    fields = ", ".join(str(f.alias) for f in model.model_fields.values())
    name = model.__name__

    def check(action: Any) -> str | None:
        if not isinstance(action, dict):
            return f"action must be a mapping with fields ({fields}), got {type(action).__name__}"
        values = action
        for value in action.values():
            if type(value) not in _AS_IS:
                values = {k: as_sent(v) for k, v in action.items()}
                break
        try:
            model.model_validate(values)
        except ValidationError as exc:  # worded as the worker words it (Environment.parse_action)
            errors = exc.errors()
            if any(e["type"] == "string_unicode" and isinstance(e.get("input"), str) for e in errors):
                return None  # a str that is not UTF-8 (a lone surrogate): the wire refuses it, named
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'action'}: {e['msg']}"
                                 for e in errors)
            return f"invalid {name}: {problems}"
        return None
    return check


def _model_of(schema: Any) -> type[BaseModel] | None:
    """A pydantic model that refuses what the schema's model refuses by its types, lengths,
    bounds and fields, and no more; None for a schema of another shape."""
    if not isinstance(schema, dict) or schema.get("type") != "object" \
            or not isinstance(schema.get("properties"), dict):
        return None
    required = schema.get("required") or []
    definitions: dict[str, Any] = {}
    for i, (key, prop) in enumerate(schema["properties"].items()):
        if not isinstance(key, str) or not isinstance(prop, dict):
            return None
        plain = not set(prop) & {"$ref", "anyOf", "allOf", "oneOf"}
        # Any: the worker decides (a type list, ["string", "null"] from json_schema_extra, too).
        kind = _TYPES.get(prop["type"], Any) if plain and isinstance(prop.get("type"), str) else Any
        limits = {_CONSTRAINTS[c]: v for c, v in prop.items() if c in _CONSTRAINTS} if kind is not Any else {}
        if kind is not Any and prop.get(STRICT_SCHEMA_KEY) is True:
            # The worker's field is strict (its model's own Strict and AllowInfNan): refused
            # here with the worker's words ("a valid number", "a finite number"), not taken
            # by lax mode ("1") or refused by a bound (NaN "less than or equal to 3600").
            limits["strict"] = True
            if kind is float:
                limits["allow_inf_nan"] = False
        default = ... if key in required else None
        # Named apart, the field's own name as its alias: any name works ("copy", "model_x").
        definitions[f"f{i}"] = (kind, Field(default, alias=key, **limits))
    extra = "forbid" if schema.get("additionalProperties") is False else "ignore"
    try:
        return create_model(str(schema.get("title") or "Action"),  # type: ignore[call-overload]
                            __config__=ConfigDict(extra=extra), **definitions)
    except Exception:  # noqa: BLE001 - a schema pydantic does not rebuild: leave it to the worker
        return None
