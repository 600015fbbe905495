"""Names a package exports but imports only when first used (PEP 562 module ``__getattr__``).

Example:
    >>> __getattr__ = lazy_attributes("demo", {"sqrt": "math"})
    >>> __getattr__("sqrt")(9.0)
    3.0
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["lazy_attributes"]


def lazy_attributes(module: str, table: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each name of ``table`` (name -> the module that
    defines it) on first use: for names whose modules are heavy to load.

    Args:
        module: The package's name, for the error about a name it lacks.
        table: Name -> module to import it from.
    """
    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(table[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
