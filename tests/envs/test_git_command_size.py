"""Git-v0: a command the action model takes is one bash can start with, or a clear
InvalidActionError, never the env's OSError."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.git.models import MAX_COMMAND, MAX_COMMAND_BYTES, GitAction
from openenv_gym.errors import InvalidActionError


def test_the_byte_limit_is_checked_by_the_model() -> None:
    assert len(GitAction(command="a" * MAX_COMMAND).command) == MAX_COMMAND
    wide = "\U0001F600" * (MAX_COMMAND_BYTES // 4 + 1)  # fewer characters than MAX_COMMAND
    assert len(wide) < MAX_COMMAND
    with pytest.raises(ValueError, match=f"bytes in UTF-8; a command line holds at most {MAX_COMMAND_BYTES}"):
        GitAction(command=wide)


def test_a_wide_command_is_an_invalid_action_and_the_session_goes_on() -> None:
    # 65000 emoji (260 KB) passed the model's character count, and bash could not start:
    # "OSError: [Errno 7] Argument list too long: 'bash'", an EnvServerError.
    env = gym.make("OpenEnv/Git-v0", provider="process", task="create-branch")
    try:
        env.reset()
        with pytest.raises(InvalidActionError, match="command: .*bytes in UTF-8"):
            env.step({"command": "echo " + "\U0001F600" * 65000})
        longest = "\U0001F600" * ((MAX_COMMAND_BYTES - 20) // 4)
        obs, *_ = env.step({"command": f"printf %s '{longest}' | wc -c"})
        assert int(obs["exit_code"]) == 0 and obs["output"].strip() == str(len(longest) * 4)
        obs, *_ = env.step({"command": "echo " + "a" * (MAX_COMMAND - 5)})
        assert int(obs["exit_code"]) == 0 and len(obs["output"]) == MAX_COMMAND - 4
    finally:
        env.close()
