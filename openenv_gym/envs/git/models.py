"""Action and observation models of ``OpenEnv/Git-v0`` (OpenEnv's command/workdir shape).

Example:
    >>> GitAction(command="git status").workdir
    ''
"""

from __future__ import annotations

from pydantic import Field, field_validator

from openenv_gym.envs._exec import MAX_OUTPUT_TEXT
from openenv_gym.models import Action, ActionTimeout, Observation

__all__ = ["GitAction", "GitObservation", "MAX_BRANCH", "MAX_COMMAND_BYTES", "MAX_INSTRUCTION",
           "MAX_OUTPUT_TEXT"]

MAX_COMMAND = 65536
#: Largest command in UTF-8 bytes: it is one argument of ``bash -c``, which Linux holds to
#: 128 KiB (``MAX_ARG_STRLEN``), less room for the limits and gate lines put before it.
MAX_COMMAND_BYTES = (128 << 10) - 1024
#: Longest task instruction an observation carries.
MAX_INSTRUCTION = 65536
#: Longest branch name an observation carries.
MAX_BRANCH = 4096


class GitAction(Action):
    """A shell command to run in the workspace.

    Attributes:
        command: Shell (bash) command line; may be empty with ``submit``. At most 65536
            characters and :data:`MAX_COMMAND_BYTES` bytes in UTF-8.
        workdir: Folder relative to the workspace (default: the task's repository).
        timeout: Seconds for this command (0: the env's default; capped by the env).
        submit: End the episode after this command (it is still run and scored).
    """

    command: str = Field(default="", max_length=MAX_COMMAND)
    workdir: str = Field(default="", max_length=4096)
    timeout: ActionTimeout = 0.0
    submit: bool = False

    @field_validator("command", "workdir")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        # A command line and a path are C strings to the kernel: NUL cannot be in them (it
        # would fail as the env's own "ValueError: embedded null byte", an HTTP 500).
        if "\x00" in value:
            raise ValueError(f"contains a NUL character (at position {value.index(chr(0))}), "
                             "which no shell command or path can hold")
        return value

    @field_validator("command")
    @classmethod
    def _fits_one_argument(cls, value: str) -> str:
        # 65536 characters of emoji are 256 KiB: bash failed to start ("Argument list too
        # long"), an error of the env's (HTTP 500) rather than of the action.
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_COMMAND_BYTES:
            raise ValueError(f"is {size} bytes in UTF-8; a command line holds at most "
                             f"{MAX_COMMAND_BYTES} (Linux's limit on one argument of bash -c): "
                             "split it over several steps, or write a script file in parts "
                             "and run it")
        return value


class GitObservation(Observation):
    """The command's output and where the task stands."""

    output: str = Field(default="", max_length=MAX_OUTPUT_TEXT)
    exit_code: int = Field(default=0, ge=-255, le=255)
    timed_out: bool = False
    branch: str = Field(default="", max_length=MAX_BRANCH)
    instruction: str = Field(default="", max_length=MAX_INSTRUCTION)
    checks_passed: int = Field(default=0, ge=0, le=10_000)
    checks_total: int = Field(default=0, ge=0, le=10_000)
