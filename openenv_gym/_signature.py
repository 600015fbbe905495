"""Which keyword arguments a callable takes, read off its signature: what the worker's refusal
of env arguments, Gym-v0's and a provider's options all ask."""

from __future__ import annotations

import difflib
import inspect
from typing import Iterable


def keyword_names(parameters: Iterable[inspect.Parameter]) -> list[str]:
    """The names a call can pass by keyword, in declaration order (``**kwargs`` aside).

    Example:
        >>> keyword_names(inspect.signature(lambda a, *args, c=1, **kw: 0).parameters.values())
        ['a', 'c']
    """
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def takes_any_keyword(parameters: Iterable[inspect.Parameter]) -> bool:
    """Whether the call takes keywords of any name (a ``**kwargs`` parameter).

    Example:
        >>> takes_any_keyword(inspect.signature(lambda a, **kw: 0).parameters.values())
        True
    """
    return any(p.kind is p.VAR_KEYWORD for p in parameters)


def did_you_mean(unknown: Iterable[str], names: Iterable[str], cutoff: float = 0.6) -> str:
    """For each of ``unknown`` that looks like a misspelt one of ``names``, that name: what a
    refusal of an argument adds, as Gymnasium's refusal of an env id does.

    Args:
        unknown: The names refused.
        names: The names taken.
        cutoff: How alike two names must be (:func:`difflib.get_close_matches`'s).

    Returns:
        ``"max_steps= for max_step="`` (joined by commas), or ``""`` when none is close.

    Example:
        >>> did_you_mean(["max_step", "colour"], ["max_steps", "frame_shape"])
        'max_steps= for max_step='
    """
    names = list(names)
    return ", ".join(f"{close[0]}= for {name}=" for name in unknown
                     if (close := difflib.get_close_matches(name, names, n=1, cutoff=cutoff)))
