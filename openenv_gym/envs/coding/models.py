"""Action and observation models of ``OpenEnv/Coding-v0``.

Example:
    >>> CodeAction(code="print(1)").timeout
    0.0
"""

from __future__ import annotations

from pydantic import Field

from openenv_gym.envs._exec import MAX_OUTPUT_TEXT
from openenv_gym.models import Action, ActionTimeout, Observation

__all__ = ["CodeAction", "CodeObservation", "MAX_CODE", "MAX_OUTPUT_TEXT"]

#: Longest code (characters) an action may carry.
MAX_CODE = 1 << 20


class CodeAction(Action):
    """Python source to run (free-form), or a completion of the task's prompt (task mode).

    Attributes:
        code: The source text.
        timeout: Wall-clock seconds for this step; 0 means the env's default, and more
            than the env's ``max_timeout`` is capped to it.
    """

    code: str = Field(max_length=MAX_CODE, description="Python source, or the completion in task mode.")
    timeout: ActionTimeout = Field(default=0.0,
                                   description="Seconds for this step (0: env default; capped by the env).")


class CodeObservation(Observation):
    """What the code did, and in task mode the task and how many of its checks passed."""

    stdout: str = Field(default="", max_length=MAX_OUTPUT_TEXT)
    stderr: str = Field(default="", max_length=MAX_OUTPUT_TEXT)
    exit_code: int = Field(default=0, ge=-255, le=255)
    timed_out: bool = False
    wall_time: float = Field(default=0.0, ge=0.0)
    prompt: str = Field(default="", max_length=MAX_CODE, description="Task prompt (task mode).")
    tests_passed: int = Field(default=0, ge=0, le=10_000)
    tests_total: int = Field(default=0, ge=0, le=10_000)
