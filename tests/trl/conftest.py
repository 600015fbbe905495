"""Fixtures for the TRL adapter tests: a tiny model biased toward one HumanEval solution.

A random tiny model only writes noise, which every env scores 0. A few seconds of
supervised steps on one canonical solution make its samples a mix of right, partly right
and broken code, so the GRPO tests see rewards that differ and really come from tests run
in the Coding env.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.trl.grpo_helpers import PROBLEM, SOLUTION

pytest.importorskip("trl", reason="needs the trl extra: pip install 'openenv-gym[trl]'")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="session")
def solver() -> tuple[Any, Any]:
    """``(model, tokenizer)``: a 2-layer Llama nudged toward ``SOLUTION`` after the prompt."""
    from openenv_gym.envs.coding.humaneval import get_problem
    from openenv_gym.trl.tiny import tiny_model_and_tokenizer

    prompt = get_problem(PROBLEM).prompt
    model, tok = tiny_model_and_tokenizer([prompt + SOLUTION, "x = 41\nprint(x + 1)\n"])
    # Prompt and solution tokenized apart, as GRPO sees them (prompt ids, then generated ids).
    nudge(model, tok, tok(prompt)["input_ids"], SOLUTION, steps=30)
    return model, tok


def nudge(model: Any, tok: Any, prompt_ids: list[int], completion: str, steps: int) -> None:
    """A few supervised steps that make ``completion`` (then EOS) likely after ``prompt_ids``."""
    import torch

    ids = prompt_ids + tok(completion, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    x = torch.tensor([ids])
    labels = x.clone()
    labels[0, :len(prompt_ids)] = -100  # only the completion is learned
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=x, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()


#: The call the ``tool_caller`` model writes: a partly right body (1 of HumanEval/2's 3 asserts).
TOOL_CALL_CODE = "    return 0.5\n"


@pytest.fixture(scope="session")
def tool_caller() -> tuple[Any, Any]:
    """``(model, tokenizer)`` with Qwen3's chat template, nudged to answer the HumanEval/2 prompt
    (rendered with the ``run_python`` tool, as GRPOTrainer renders it) with one call of that tool."""
    import json

    from trl.chat_template_utils import qwen3_chat_template

    from openenv_gym.envs.coding.humaneval import get_problem
    from openenv_gym.trl import CodingTools
    from openenv_gym.trl.tiny import tiny_model_and_tokenizer

    prompt = get_problem(PROBLEM).prompt
    call = ("<tool_call>\n" + json.dumps({"name": "run_python", "arguments": {"code": TOOL_CALL_CODE}})
            + "\n</tool_call><|im_end|>")
    model, tok = tiny_model_and_tokenizer([prompt, call])
    tok.chat_template = qwen3_chat_template
    rendered = tok.apply_chat_template([{"role": "user", "content": prompt}], tools=[CodingTools.run_python],
                                       add_generation_prompt=True, tokenize=False)
    nudge(model, tok, tok(rendered, add_special_tokens=False)["input_ids"], call, steps=150)
    return model, tok
