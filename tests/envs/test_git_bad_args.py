"""Git-v0 refuses an on/off argument that is not a bool, as Coding-v0 does: arguments reach
workers as JSON, and a "False" string from a config file is truthy."""

from __future__ import annotations

import pytest

from openenv_gym.envs.git.env import GitEnv


@pytest.mark.parametrize("flag", ["shaping", "confine"])
@pytest.mark.parametrize("value", ["False", 0, None])
def test_a_flag_that_is_not_a_bool_is_refused(flag: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{flag} must be True or False"):
        GitEnv(**{flag: value})
