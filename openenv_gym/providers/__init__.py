"""Providers: where workers run — ``process`` (default), ``docker``, ``ray``, or ``auto``.

Example:
    >>> get_provider("process").name
    'process'
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers.base import Provider, Worker

__all__ = ["Provider", "Worker", "get_provider", "PROVIDERS", "resolve_provider_name"]

#: Provider name -> "module:Class"; imported only when used (docker and ray are extras).
PROVIDERS: dict[str, str] = {
    "process": "openenv_gym.providers.process:ProcessProvider",
    "docker": "openenv_gym.providers.docker:DockerProvider",
    "ray": "openenv_gym.providers.ray:RayProvider",
}


def provider_class(name: str) -> type[Provider]:
    """The class of a provider by name.

    Raises:
        ValueError: Unknown name.
        ProviderUnavailableError: Its module cannot be imported (extra not installed).
    """
    if name not in PROVIDERS:
        raise ValueError(f"unknown provider {name!r}; use one of auto, {', '.join(PROVIDERS)}")
    module, _, attr = PROVIDERS[name].partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise ProviderUnavailableError(
            f"provider {name!r} needs an extra: pip install 'openenv-gym[{name}]' ({exc})"
        ) from None


def resolve_provider_name(name: str, untrusted: bool = False) -> str:
    """Turn ``"auto"`` into a concrete provider: docker when an engine is reachable, else process.

    Warns when an env that runs untrusted code falls back to the process provider.
    """
    if name != "auto":
        return name
    try:
        ok, reason = provider_class("docker").available()
    except (ProviderUnavailableError, ValueError):
        ok, reason = False, "the docker extra is not installed"
    if ok:
        return "docker"
    if untrusted:
        warnings.warn(
            "this env runs untrusted code but no Docker engine is reachable "
            f"({reason}); falling back to provider='process', which does NOT isolate it from "
            "this machine. Start Docker, or pass provider='process' to silence this warning.",
            RuntimeWarning,
            stacklevel=3,
        )
    return "process"


def get_provider(name: str = "auto", untrusted: bool = False, **options: Any) -> Provider:
    """Build a provider.

    Args:
        name: ``"process"``, ``"docker"``, ``"ray"`` or ``"auto"``.
        untrusted: The env runs untrusted code (``auto`` warns when it cannot isolate it).
        **options: Passed to the provider's constructor.

    Returns:
        The provider.
    """
    cls = provider_class(resolve_provider_name(name, untrusted))
    ok, reason = cls.available()
    if not ok:
        raise ProviderUnavailableError(f"provider {cls.name!r} cannot run here: {reason}")
    return cls(**options)
