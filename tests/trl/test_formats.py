"""How a completion's text becomes the code a Coding episode runs."""

from __future__ import annotations

import pytest

from openenv_gym.trl import extract_code


@pytest.mark.parametrize("tag", ["python", "Python", "PYTHON", "python3", "py", "Py", ""])
def test_a_fenced_block_is_run_without_its_fences_whatever_the_tags_case(tag: str) -> None:
    text = f"Here it is:\n```{tag}\ndef f(x):\n    return x\n```\nIt returns x."
    # was: "```Python" and "```python3" were not taken for fences: the markdown ran as Python
    assert extract_code(text) == "def f(x):\n    return x\n"


def test_a_bare_completion_is_run_as_it_is() -> None:
    assert extract_code("    return x + 1\n") == "    return x + 1\n"


@pytest.mark.parametrize("completion", [[], [{"role": "assistant", "content": None,
                                              "tool_calls": [{"type": "function", "function": {"name": "f"}}]}]])
def test_a_conversation_without_text_has_none(completion: list) -> None:
    from openenv_gym.trl import completion_text

    # was: "[]" and "None", which ran as code (and scored a clean exit) or as a shell command
    assert completion_text(completion) == ""
