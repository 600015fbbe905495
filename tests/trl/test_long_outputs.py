"""A step that prints a lot reaches the model cut to its head and tail (``MAX_OUTPUT_CHARS``
per output field): a sandbox's 64 KiB of output was ~16k tokens in one tool result, enough
to push a rollout past the model's context."""

from __future__ import annotations

from openenv_gym.trl import EnvPool
from openenv_gym.trl.formats import MAX_OUTPUT_CHARS, default_observation_fn
from openenv_gym.trl.tools import tool_env_factory


def test_a_long_tool_result_keeps_its_head_and_tail() -> None:
    with EnvPool("coding", num_workers=1, provider="process") as pool:
        tools = tool_env_factory(pool)()
        tools.reset(prompt="Print a lot.")
        text = tools.run_python("print('START' + 'x' * 60000 + 'END')")
    assert len(text) < MAX_OUTPUT_CHARS + 200, len(text)
    assert text.startswith("STARTx") and "xEND\n" in text
    assert f"[... {60008 - MAX_OUTPUT_CHARS} characters cut ...]" in text
    assert text.endswith("[exit_code: 0]\n")  # what comes after the output is never cut


def test_short_outputs_and_the_task_are_left_whole() -> None:
    step = default_observation_fn("git")
    assert step({"output": "ok\n", "exit_code": 0}) == "ok\n[exit_code: 0]\n"
    long_task = "Do this. " * 1000
    assert default_observation_fn("git", task=True)({"instruction": long_task}) == long_task.rstrip("\n") + "\n"
    whole = default_observation_fn("coding", max_chars=None)({"stdout": "y" * 10000, "exit_code": 0})
    assert whole == "y" * 10000 + "\n[exit_code: 0]\n"
