"""Typed Action / Observation / State models, and the one mapping from models to spaces.

Text and structured environments declare pydantic models; :func:`model_space` derives the
matching Gymnasium ``Dict`` space from the model's fields, so no env writes its space twice.

| field annotation | space |
|---|---|
| ``str`` (``max_length`` from ``Field``) | :class:`~openenv_gym.spaces.UnicodeText` |
| ``bool`` | ``Discrete(2)`` |
| ``int`` (``ge``/``le`` from ``Field``) | ``Box(shape=(), dtype=int64)`` |
| ``float`` (``ge``/``le`` from ``Field``) | ``Box(shape=(), dtype=float64)`` |

Example:
    >>> from pydantic import Field
    >>> class Say(Action):
    ...     message: str = Field(max_length=8)
    >>> model_space(Say)
    Dict('message': UnicodeText(0, 8))
"""

from __future__ import annotations

from typing import Annotated, Any

import annotated_types
import numpy as np
from gymnasium import spaces
from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, Strict

from openenv_gym._numbers import STRICT_SCHEMA_KEY
from openenv_gym.spaces import UnicodeText

__all__ = ["Action", "Observation", "State", "model_space", "DEFAULT_TEXT_LENGTH"]

#: Longest text a ``str`` field holds when its ``Field`` sets no ``max_length``.
DEFAULT_TEXT_LENGTH = 1 << 20
_INT_BOUND = 2**62
#: Longest per-step timeout (seconds) an action may ask for; the env caps it to its own.
MAX_ACTION_TIMEOUT = 3600.0
#: An action's per-step ``timeout`` (Coding's and Git's), in seconds; 0 means the env's default.
#: A number only: pydantic's lax mode took ``"1"`` and ``True`` as 1.0 although the schema says
#: number, and refused NaN as not "less than or equal to 3600". Strict and finite here, and
#: said so in the schema (:data:`~openenv_gym._numbers.STRICT_SCHEMA_KEY`), so that a vector
#: client refuses the same before it sends (``AllowInfNan`` and ``Strict`` only refuse more than
#: the rest of the schema says: the model stays one that client may check).
ActionTimeout = Annotated[float, Strict(), AllowInfNan(False),
                          Field(ge=0.0, le=MAX_ACTION_TIMEOUT, json_schema_extra={STRICT_SCHEMA_KEY: True})]


class Action(BaseModel):
    """Base class of an env's action model; unknown fields are rejected.

    Example:
        >>> class Say(Action):
        ...     message: str
        >>> Say(message="hi"), model_space(Say)["message"]
        (Say(message='hi'), UnicodeText(0, 1048576))
    """

    model_config = ConfigDict(extra="forbid")


class Observation(BaseModel):
    """Base class of an env's observation model.

    Example:
        >>> class Heard(Observation):
        ...     echo: str
        ...     length: int
        >>> list(model_space(Heard))
        ['echo', 'length']
    """

    model_config = ConfigDict(extra="forbid")


class State(BaseModel):
    """What ``GET /state`` returns: episode bookkeeping plus env-specific fields.

    Args:
        episode_id: Id of the current episode (changes at every reset).
        step_count: Steps taken in the current episode.

    Example:
        >>> State(episode_id="e1", step_count=3).model_dump()
        {'episode_id': 'e1', 'step_count': 3}
    """

    model_config = ConfigDict(extra="allow")

    episode_id: str | None = None
    step_count: int = 0


def _bounds(metadata: list[Any]) -> tuple[Any, Any, int | None]:
    low = high = max_len = None
    for m in metadata:
        if isinstance(m, annotated_types.Ge):
            low = m.ge
        elif isinstance(m, annotated_types.Gt):
            low = m.gt
        elif isinstance(m, annotated_types.Le):
            high = m.le
        elif isinstance(m, annotated_types.Lt):
            high = m.lt
        elif isinstance(m, annotated_types.MaxLen):
            max_len = m.max_length
    return low, high, max_len


def model_space(model: type[BaseModel]) -> spaces.Dict:
    """Derive the Gymnasium ``Dict`` space of a pydantic model.

    Args:
        model: An :class:`Action` or :class:`Observation` subclass whose fields are
            ``str``, ``bool``, ``int`` or ``float``.

    Returns:
        A ``Dict`` space with one entry per field, in field order.

    Raises:
        TypeError: A field has a type with no space mapping.

    Example:
        >>> from pydantic import Field
        >>> class Move(Action):
        ...     steps: int = Field(ge=0, le=9)
        ...     run: bool = False
        >>> model_space(Move)["run"]
        Discrete(2)
    """
    entries: dict[str, spaces.Space] = {}
    for name, field in model.model_fields.items():
        ann = field.annotation
        low, high, max_len = _bounds(field.metadata)
        if ann is str:
            entries[name] = UnicodeText(max_len or DEFAULT_TEXT_LENGTH)
        elif ann is bool:
            entries[name] = spaces.Discrete(2)
        elif ann is int:
            entries[name] = spaces.Box(
                low=-_INT_BOUND if low is None else low,
                high=_INT_BOUND if high is None else high,
                shape=(),
                dtype=np.int64,
            )
        elif ann is float:
            entries[name] = spaces.Box(
                low=-np.inf if low is None else low,
                high=np.inf if high is None else high,
                shape=(),
                dtype=np.float64,
            )
        else:
            raise TypeError(f"{model.__name__}.{name}: type {ann!r} has no space mapping; "
                            "use str, bool, int or float, or declare the env's spaces directly")
    return spaces.Dict(entries)
