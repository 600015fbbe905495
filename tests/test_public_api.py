"""The public API is documented in Gymnasium's manner: every name in the ``__all__`` of a
module users import from has a docstring with an example (and ``Args:`` when it takes
arguments), and every public method of a public class has a docstring (with ``Args:`` on
the env classes users call directly)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest

#: The modules users import from (README): the package, its adapters, and the env author's API.
PUBLIC_MODULES = ["openenv_gym", "openenv_gym.errors", "openenv_gym.spaces", "openenv_gym.models",
                  "openenv_gym.catalog", "openenv_gym.vector", "openenv_gym.sb3", "openenv_gym.trl",
                  "openenv_gym.providers", "openenv_gym.envs"]
#: Classes whose every public method with arguments documents them (``Args:``).
CALLED_DIRECTLY = {"RemoteEnv", "RemoteVectorEnv", "RemoteVecEnv"}


def _public_objects() -> list[tuple[str, Any]]:
    found: dict[int, tuple[str, Any]] = {}
    for name in PUBLIC_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # an adapter whose extra is not installed
            if exc.name and exc.name.startswith("openenv_gym"):
                raise
            continue
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.setdefault(id(obj), (f"{name}.{attr}", obj))
    return sorted(found.values(), key=lambda item: item[0])


def _takes_arguments(obj: Any) -> bool:
    target = obj.__init__ if inspect.isclass(obj) else obj
    if getattr(target, "__module__", None) is None or not target.__module__.startswith("openenv_gym"):
        return False  # object's or pydantic's constructor: the fields are the arguments
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return False
    return any(p.name not in ("self", "cls") for p in params)


def _documents_arguments(obj: Any) -> bool:
    if not inspect.isclass(obj):
        return "Args:" in (obj.__doc__ or "")
    if dataclasses.is_dataclass(obj) and "Attributes:" in (obj.__doc__ or ""):
        return True  # a dataclass's fields are its arguments
    # A subclass that keeps its base's constructor may leave the arguments to the base's docstring.
    return any("Args:" in (klass.__dict__.get("__doc__") or "")
               or "Args:" in (getattr(klass.__dict__.get("__init__"), "__doc__", None) or "")
               for klass in obj.__mro__ if klass.__module__.startswith("openenv_gym"))


PUBLIC = _public_objects()


@pytest.mark.parametrize("qualname, obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_public_name_has_a_docstring_with_an_example(qualname: str, obj: Any) -> None:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    assert doc and doc.strip(), f"{qualname} has no docstring"
    assert "Example" in doc, f"{qualname}'s docstring has no Example section"
    if _takes_arguments(obj) and not issubclass(obj if inspect.isclass(obj) else object, BaseException):
        assert _documents_arguments(obj), f"{qualname} takes arguments but its docstring has no Args section"


@pytest.mark.parametrize("qualname, cls", [(q, o) for q, o in PUBLIC if inspect.isclass(o)],
                         ids=[q for q, o in PUBLIC if inspect.isclass(o)])
def test_public_methods_are_documented(qualname: str, cls: type) -> None:
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        func = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        func = func.fget if isinstance(func, property) else func
        if not inspect.isfunction(func):
            continue
        assert func.__doc__ and func.__doc__.strip(), f"{qualname}.{name} has no docstring"
        if cls.__name__ in CALLED_DIRECTLY and _takes_arguments(func) and not isinstance(member, property):
            assert "Args:" in func.__doc__, f"{qualname}.{name} takes arguments but documents none (Args:)"
