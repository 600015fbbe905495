"""reward_mode and max_turns are refused with the package's typed errors, as EnvPool's other
arguments are (README: every error the package raises is an OpenEnvError)."""

from __future__ import annotations

import pytest

from openenv_gym.errors import InvalidRequestError


def test_unknown_reward_mode_is_an_invalid_request_error() -> None:
    from openenv_gym.trl import EnvPool

    with pytest.raises(InvalidRequestError, match=r"reward_mode='best'; use one of \['return', 'final'\]"):
        EnvPool("echo", 1, provider="process", reward_mode="best")


def test_bad_max_turns_is_an_invalid_request_error() -> None:
    from openenv_gym.trl import EnvPool, EnvRollout

    with EnvPool("echo", 1, provider="process") as pool:
        with pytest.raises(InvalidRequestError, match="max_turns must be a positive int, got 0"):
            EnvRollout(pool, max_turns=0)
        with pytest.raises(InvalidRequestError, match="max_turns must be a positive int, got True"):
            EnvRollout(pool, max_turns=True)  # it ran one turn


def test_a_numpy_max_turns_counts() -> None:
    import numpy as np

    from openenv_gym.trl import EnvPool, EnvRollout

    # It was refused as "max_turns must be a positive int, got 4".
    with EnvPool("echo", 1, provider="process") as pool:
        assert EnvRollout(pool, max_turns=np.int64(4)).max_turns == 4


def test_adapter_setup_errors_are_the_packages_own() -> None:
    # They were bare ValueErrors: `except OpenEnvError` missed them (InvalidRequestError is a
    # ValueError too, so `except ValueError` still catches them).
    from gymnasium import spaces

    from openenv_gym.errors import OpenEnvError
    from openenv_gym.trl import EnvPool, tool_env_factory
    from openenv_gym.trl.datasets import RowTask
    from openenv_gym.trl.formats import default_action_fn, text_field

    with pytest.raises(InvalidRequestError, match="option_columns or options_fn, not both"):
        RowTask(option_columns=("problem",), options_fn=lambda row: None)
    with pytest.raises(InvalidRequestError, match="no text field; pass action_fn="):
        text_field(spaces.Discrete(2))
    with pytest.raises(InvalidRequestError, match="without its action space"):
        default_action_fn("echo")
    with EnvPool("echo", 1, provider="process") as pool:
        with pytest.raises(OpenEnvError, match="has no tool env"):
            tool_env_factory(pool)
