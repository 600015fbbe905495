"""Text <-> env glue: completions become actions, observations become text for the model.

An LLM writes text; our envs take structured actions (``{"code": ...}`` for Coding,
``{"message": ...}`` for Echo). :func:`default_action_fn` picks the right shape for a
catalog env, and :func:`default_observation_fn` renders an observation as the text a
multi-turn rollout feeds back to the model. Pass your own functions to the adapter to
change either.

Example:
    >>> to_action = default_action_fn("coding")
    >>> to_action("```python\\nprint(1)\\n```")
    {'code': 'print(1)\\n'}
    >>> completion_text([{"role": "assistant", "content": "hi"}])
    'hi'
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from gymnasium import spaces

from openenv_gym._numbers import is_int
from openenv_gym.errors import InvalidRequestError
from openenv_gym.spaces import UnicodeText

__all__ = [
    "ActionFn",
    "ObservationFn",
    "completion_text",
    "extract_code",
    "default_action_fn",
    "default_observation_fn",
    "text_field",
    "OUTPUT_FIELDS",
    "TASK_FIELDS",
    "MAX_OUTPUT_CHARS",
]

#: ``action_fn(completion_text) -> action`` in the env's action format.
ActionFn = Callable[[str], Any]
#: ``observation_fn(observation) -> text`` shown to the model on the next turn.
ObservationFn = Callable[[Any], str]

# Tags as models write them: "```Python" and "```python3" too (left as text, the fences
# reached the interpreter as a SyntaxError and the completion scored 0).
_FENCE = re.compile(r"```[ \t]*(?:python3?|py3?|bash|sh|shell)?[ \t]*\n(.*?)(?:```|\Z)",
                    re.DOTALL | re.IGNORECASE)


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or the last message of a conversation.

    Args:
        completion: A completion as TRL passes it to reward functions.

    Returns:
        Its text.

    Example:
        >>> completion_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
        'a'
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        if not completion:  # a conversation with no message: no text, not "[]"
            return ""
        last = completion[-1]
        if isinstance(last, Mapping):
            content = last.get("content", "")
            if content is None:  # an assistant message holding only tool calls: not "None"
                return ""
            if isinstance(content, list):  # typed content blocks
                return "".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
            return str(content)
    return "" if completion is None else str(completion)


def extract_code(text: str) -> str:
    """The first fenced code block of ``text`` (`` ```python ... ``` ``), else ``text`` itself.

    Models asked for code often wrap it in a fence; a bare completion (HumanEval style,
    continuing the prompt) is used as it is.

    Args:
        text: The completion's text.

    Returns:
        The code to run.

    Example:
        >>> extract_code("Here:\\n```python\\nprint(1)\\n```\\n")
        'print(1)\\n'
    """
    match = _FENCE.search(text)
    if match is None:
        return text
    code = match.group(1)
    return code if code.endswith("\n") else code + "\n"


def text_field(action_space: spaces.Space) -> str:
    """The first text field of a Dict action space (the one a completion fills)."""
    if isinstance(action_space, spaces.Dict):
        for name, sub in action_space.spaces.items():
            if isinstance(sub, (UnicodeText, spaces.Text)):
                return name
    raise InvalidRequestError(f"action space {action_space} has no text field; pass action_fn=... "
                              "to turn completions into actions")


def default_action_fn(env: str, action_space: spaces.Space | None = None) -> ActionFn:
    """How a completion becomes an action for ``env``.

    Args:
        env: Catalog name (``"coding"``, ``"echo"``, ``"git"``, ...).
        action_space: The env's action space, used to find the text field of other envs.

    Returns:
        Coding: ``{"code": extract_code(text)}``; Git: ``{"command": first code block or
        the text, stripped}``; others: ``{<first text field>: text}``.

    Example:
        >>> default_action_fn("git")("git status")
        {'command': 'git status'}
    """
    if env == "coding":
        return lambda text: {"code": extract_code(text)}
    if env == "git":
        return lambda text: {"command": extract_code(text).strip()}
    if action_space is None:
        raise InvalidRequestError(f"no default action format for env {env!r} without its action space")
    field = text_field(action_space)
    return lambda text: {field: text}


#: Observation fields holding what a command or program printed (shown after every step).
OUTPUT_FIELDS = ("output", "stdout", "stderr", "echo", "message")
#: Observation fields posing the task (shown once, with the reset observation).
TASK_FIELDS = ("instruction", "prompt")
#: Characters of each output field a step's text keeps by default (its head and its tail):
#: a program that prints 64 KiB (the sandbox's cap) would otherwise put ~16k tokens into the
#: model's context in one turn, past many models' budget for the whole rollout.
MAX_OUTPUT_CHARS = 4096


def _cut(text: str, limit: int) -> str:
    """``text``, or its head and tail around a note of how much was cut."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    # text[-0:] is the whole text: with no tail to keep, keep none
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:] if tail else ''}"


def default_observation_fn(env: str, *, task: bool = False,
                           max_chars: int | None = MAX_OUTPUT_CHARS) -> ObservationFn:
    """How an observation becomes text for the model.

    Args:
        env: Catalog name (``"coding"``, ``"git"``, ...).
        task: Render a reset observation, the one that poses the task: the task's text
            (Git's ``instruction``, Coding's ``prompt``) and the score it starts from. By
            default a step's: what the command printed, its exit code, whether it timed out
            and the score -- not the task's text again (the model has it in its context).
        max_chars: Characters kept of each output field of a step (its head and tail, the
            cut noted in between); None keeps all. The task's text is never cut.

    Returns:
        A function joining the observation's text fields, then ``[exit_code: N]``,
        ``[timed out ...]`` and the tests or checks passed out of the total (left out when
        there are none, as in free-form Coding).

    Raises:
        InvalidRequestError: ``max_chars`` is negative or not an int (a ``ValueError``).

    Example:
        >>> default_observation_fn("coding")({"stdout": "1\\n", "stderr": "", "exit_code": 0})
        '1\\n[exit_code: 0]\\n'
        >>> default_observation_fn("git")({"output": "", "exit_code": -9, "timed_out": True,
        ...                                 "instruction": "Merge.", "checks_passed": 1, "checks_total": 3})
        '[exit_code: -9]\\n[timed out: the command was killed at its time limit]\\n[checks_passed: 1/3]\\n'
    """
    # is_int: numpy's ints count (np.int64(4096) was refused as "must be an int ... not 4096").
    if max_chars is not None and not is_int(max_chars, 0):
        raise InvalidRequestError(f"max_chars must be an int >= 0 or None, not {max_chars!r}")
    max_chars = None if max_chars is None else int(max_chars)
    fields = TASK_FIELDS if task else OUTPUT_FIELDS

    def render(obs: Any) -> str:
        if not isinstance(obs, Mapping):
            return str(obs)
        # Each text already ends its own line; joining them as they are would leave blank lines.
        parts = [obs[k].rstrip("\n") for k in fields if isinstance(obs.get(k), str) and obs[k].strip()]
        if not task and max_chars is not None:
            parts = [_cut(part, max_chars) for part in parts]
        if not task:
            if "exit_code" in obs:
                parts.append(f"[exit_code: {int(obs['exit_code'])}]")
            if obs.get("timed_out"):
                parts.append("[timed out: the command was killed at its time limit]")
        for key, total in (("tests_passed", "tests_total"), ("checks_passed", "checks_total")):
            if key not in obs:
                continue
            if total not in obs:
                parts.append(f"[{key}: {int(obs[key])}]")
            elif int(obs[total]) > 0:  # no tests (free-form): "0 passed" would read as a failure
                parts.append(f"[{key}: {int(obs[key])}/{int(obs[total])}]")
        return "\n".join(parts) + "\n"

    return render
