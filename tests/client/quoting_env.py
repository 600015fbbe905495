"""An env that takes ``step_timeout`` and ``timeout`` itself, and whose constructor fails on a
bug of its own with a ``TypeError`` that quotes "unexpected keyword argument 'step_timeout'":
not a refusal of the argument, which it takes. Registered on import (workers import it by
``env_id="tests.client.quoting_env:OpenEnvTest/QuotesRefusal-v0"``)."""

from __future__ import annotations

import gymnasium as gym

QUOTES_REFUSAL_ID = "OpenEnvTest/QuotesRefusal-v0"


def _connect() -> None:
    """A helper that takes no limit: the env's bug is passing it one."""


class QuotesRefusal(gym.Env):
    def __init__(self, step_timeout: float | None = None, timeout: float | None = None) -> None:
        given = {name: value for name, value in (("step_timeout", step_timeout), ("timeout", timeout))
                 if value is not None}
        _connect(**given)  # TypeError: _connect() got an unexpected keyword argument '...'


if QUOTES_REFUSAL_ID not in gym.registry:
    gym.register(QUOTES_REFUSAL_ID, entry_point=QuotesRefusal)
