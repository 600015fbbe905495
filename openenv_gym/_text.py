"""Cutting text to quote it in a message: an action may hold a whole program, a path or a
session id a caller sent may be megabytes, and a reply or log line must not echo it back whole.

No imports beyond the standard library's: the CLI's and the worker's error paths use it.

Example:
    >>> cut("abcdefghij", 8)
    'abcde...'
    >>> short_repr("x" * 100, 10)
    "'xxxxxx..."
"""

from __future__ import annotations

from typing import Any

__all__ = ["cut", "short_repr"]


def cut(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters, a cut marked by "...".

    Args:
        text: The text to quote.
        limit: The longest text returned, the "..." that marks a cut included.

    Returns:
        ``text`` itself if it fits, else its start and "...".

    Example:
        >>> cut("/" + "x" * 100, 10)
        '/xxxxxx...'
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for quoting a value in an error message.

    Args:
        value: The value to quote.
        limit: The longest text returned, the "..." that marks a cut included.

    Returns:
        The text.

    Example:
        >>> short_repr("x" * 100, 10)
        "'xxxxxx..."
    """
    return cut(repr(value), limit)
