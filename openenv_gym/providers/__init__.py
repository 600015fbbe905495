"""Providers: where workers run — ``process`` (default), ``docker``, ``ray``, or ``auto``.

Example:
    >>> get_provider("process").name
    'process'
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from openenv_gym._lazy import import_or_undo
from openenv_gym._signature import did_you_mean, keyword_names, takes_any_keyword
from openenv_gym.errors import InvalidRequestError, ProviderUnavailableError
from openenv_gym.providers import _ray_fork  # noqa: F401  (marks forks of Ray users from the start)
from openenv_gym.providers.base import Provider, Worker

# PROVIDERS, provider_class, provider_options_dict and resolve_provider_name serve the
# CLI, the envs and the adapters; importable, but not public.
__all__ = ["Provider", "Worker", "get_provider"]

#: Provider name -> "module:Class"; imported only when used (docker and ray are extras).
PROVIDERS: dict[str, str] = {
    "process": "openenv_gym.providers.process:ProcessProvider",
    "docker": "openenv_gym.providers.docker:DockerProvider",
    "ray": "openenv_gym.providers.ray:RayProvider",
}


def provider_class(name: str) -> type[Provider]:
    """The class of a provider by name.

    Raises:
        InvalidRequestError: Unknown name (a ``ValueError``).
        ProviderUnavailableError: Its module cannot be imported (extra not installed).
    """
    if name not in PROVIDERS:
        raise InvalidRequestError(f"unknown provider {name!r}; use one of auto, {', '.join(PROVIDERS)}")
    module, _, attr = PROVIDERS[name].partition(":")
    try:
        # import_or_undo: a Ctrl-C during ray's first import must not break the next try.
        return getattr(import_or_undo(module), attr)
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
        from openenv_gym.providers._docker_images import build_problem

        # A wheel install has no Dockerfile: the docker provider could find or build no image.
        problem = build_problem()
        if problem is None:
            return "docker"
        reason = f"a Docker engine answers, but {problem}"
    if untrusted:
        warnings.warn(
            "this env runs untrusted code but the docker provider cannot run it here "
            f"({reason}); falling back to provider='process', which does NOT isolate it from "
            "this machine. Start Docker, or pass provider='process' to silence this warning.",
            RuntimeWarning,
            stacklevel=3,
        )
    return "process"


def provider_options_dict(options: Any) -> dict[str, Any]:
    """``provider_options`` as keyword arguments for :func:`get_provider` (None: none).

    Raises:
        TypeError: Not a mapping of option names (``[1]``, ``"fork"``), named as the caller
            wrote it, instead of Python's ``argument after ** must be a mapping``.

    Example:
        >>> provider_options_dict({"fork": False})
        {'fork': False}
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise TypeError(f"provider_options must be a dict of option names and values, e.g. "
                        f"provider_options={{'fork': False}}; got {type(options).__name__} "
                        f"{options!r}")
    return dict(options)


def get_provider(name: str = "auto", untrusted: bool = False, **options: Any) -> Provider:
    """Build a provider.

    Args:
        name: ``"process"``, ``"docker"``, ``"ray"`` or ``"auto"``.
        untrusted: The env runs untrusted code (``auto`` warns when it cannot isolate it).
        **options: Passed to the provider's constructor.

    Returns:
        The provider.

    Raises:
        TypeError: An option the provider does not take (with ``"auto"``: one that neither
            docker nor process takes; the other one's options are dropped).

    Example:
        >>> provider = get_provider("process", fork=False)   # starts nothing yet
        >>> provider.name
        'process'
    """
    cls = provider_class(resolve_provider_name(name, untrusted))
    ok, reason = cls.available()
    if not ok:
        raise ProviderUnavailableError(f"provider {cls.name!r} cannot run here: {reason}")
    accepted = _options_of(cls.name)
    unknown = sorted(set(options) - accepted) if accepted is not None else []
    if unknown and name == "auto":
        # Written for whichever provider auto picks: an option of the other one is not an error.
        other = "process" if cls.name == "docker" else "docker"
        elsewhere = _options_of(other) or set()
        options = {k: v for k, v in options.items() if k in accepted}  # type: ignore[operator]
        unknown = [k for k in unknown if k not in elsewhere]
        if unknown:
            raise TypeError(
                f"provider_options {unknown} are options of neither provider 'auto' can pick; "
                f"{cls.name} (picked here) takes: {', '.join(sorted(accepted or ()))}; "
                f"{other} takes: {', '.join(sorted(elsewhere))}{_guess(unknown, {*(accepted or ()), *elsewhere})}")
    if unknown:
        raise TypeError(f"provider_options {unknown} are not options of the {cls.name} provider; "
                        f"it takes: {', '.join(sorted(accepted or ()))}{_guess(unknown, accepted or ())}")
    return cls(**options)


def _guess(unknown: list[str], names: Iterable[str]) -> str:
    """`` (did you mean fork= for forkk=?)`` for the options that look like misspelt ones of
    ``names``, else ``""``."""
    guess = did_you_mean(unknown, sorted(names))
    return f" (did you mean {guess}?)" if guess else ""


def _options_of(name: str) -> set[str] | None:
    """The keyword options a provider's constructor takes (None: any; empty: not importable)."""
    try:
        cls = provider_class(name)
    except (ProviderUnavailableError, ValueError):
        return set()
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # after self
    return None if takes_any_keyword(params) else set(keyword_names(params))
