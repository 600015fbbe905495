"""Environments served by openenv_gym workers, one folder each, all on :mod:`.base`.

Example:
    >>> from openenv_gym.envs import Environment
    >>> Environment.__module__
    'openenv_gym.envs.base'
"""

from openenv_gym._lazy import lazy_attributes

__all__ = ["Environment"]

# Lazily loaded: the trainer imports this package without wanting the env contract (the docker
# provider's image lookup finds an env's module with importlib.util.find_spec, which imports
# its parent packages), and the contract pulls in pydantic.
__getattr__ = lazy_attributes(__name__, {"Environment": "openenv_gym.envs.base"})


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})  # the lazy name too, before its first use
