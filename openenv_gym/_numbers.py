"""Checks of numeric and on/off arguments, shared by every constructor that takes them.

All accept numpy's scalars (``np.int64(5)`` is what ``rng.integers`` and array indexing give);
the numeric ones refuse ``bool`` (``True`` is an ``int`` to Python, never a count or a
duration), and :func:`is_flag` refuses anything else (``bool("False")`` is True: a string
from a config file would flip the flag).

Example:
    >>> import numpy as np
    >>> is_int(np.int64(3), 1), is_int(True, 0), is_int(2.0, 1)
    (True, False, False)
    >>> is_finite(np.float32(0.5)), is_finite(float("nan")), is_finite("1")
    (True, False, False)
    >>> is_flag(np.bool_(True)), is_flag("False"), is_flag(0)
    (True, False, False)
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = ["STRICT_SCHEMA_KEY", "is_finite", "is_flag", "is_int"]

#: Keyword of a JSON-schema property (an env's ``action_schema``) whose field takes only what
#: its ``type`` says, as JSON Schema reads it: a ``"number"`` is an int or a float (numpy's too)
#: and, as any JSON number, finite; never a numeric string or a bool, which pydantic's default
#: (lax) mode turns into a number. The schema is all a vector client's check before it sends
#: sees of the field (:mod:`openenv_gym.vector.precheck`): this says it refuses the same.
STRICT_SCHEMA_KEY = "x-strict"


def is_int(value: Any, low: int | None = None, high: int | None = None) -> bool:
    """Whether ``value`` is a whole number (not a bool) within ``low``..``high`` (inclusive).

    Args:
        value: What the caller passed.
        low: Smallest allowed value (None: no bound).
        high: Largest allowed value (None: no bound).
    """
    return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
            and (low is None or value >= low) and (high is None or value <= high))


def is_finite(value: Any) -> bool:
    """Whether ``value`` is a finite real number (not a bool, NaN or an infinity).

    Args:
        value: What the caller passed.
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def is_flag(value: Any) -> bool:
    """Whether ``value`` is ``True`` or ``False`` (numpy's ``np.bool_`` too).

    Args:
        value: What the caller passed.
    """
    return isinstance(value, (bool, np.bool_))
