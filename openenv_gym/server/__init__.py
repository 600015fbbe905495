"""The env server: sessions of one env type served over binary frames and HTTP/JSON.

Nothing here is imported by ``import openenv_gym``, and importing a submodule does not load
the rest: the trainer imports :mod:`openenv_gym.server.forkserver` (for its message limit)
when it starts process workers, and must not pay for the service, sessions and pydantic
models that only workers run.
"""

from __future__ import annotations

from openenv_gym._lazy import lazy_attributes

__all__ = ["EnvService", "build_service", "run_server"]

# Lazily loaded, as in ``openenv_gym/__init__.py``: each pulls in the whole worker stack.
_LAZY = {
    "EnvService": "openenv_gym.server.service",
    "build_service": "openenv_gym.server.main",
    "run_server": "openenv_gym.server.main",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
