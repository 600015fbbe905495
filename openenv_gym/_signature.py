"""Which keyword arguments a callable takes, read off its signature: what the worker's refusal
of env arguments, Gym-v0's and a provider's options all ask."""

from __future__ import annotations

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
