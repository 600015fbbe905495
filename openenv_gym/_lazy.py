"""Lazy imports: names a package exports but imports only when first used (PEP 562 module
``__getattr__``), and :func:`import_or_undo` for heavy modules imported on first use.

Example:
    >>> __getattr__ = lazy_attributes("demo", {"sqrt": "math"})
    >>> __getattr__("sqrt")(9.0)
    3.0
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any, Callable

__all__ = ["import_or_undo", "lazy_attributes"]


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


def import_or_undo(name: str) -> ModuleType:
    """``importlib.import_module(name)``, but a failed import leaves ``sys.modules`` as it was.

    Python drops only the module whose body raised; the submodules it had finished loading stay
    in ``sys.modules``, so after a Ctrl-C during a first ``import docker`` in a live
    interpreter (Jupyter) the next import re-runs the package but finds those leftovers, and
    fails with e.g. ``module 'urllib3' has no attribute '_collections'`` until a restart.
    Forgetting every module the failed import added makes the next attempt a clean one.

    Raises:
        BaseException: Whatever the import raised (``ImportError``, ``KeyboardInterrupt``).
    """
    before = set(sys.modules)
    try:
        return importlib.import_module(name)
    except BaseException:
        for added in set(sys.modules) - before:
            sys.modules.pop(added, None)
        raise
