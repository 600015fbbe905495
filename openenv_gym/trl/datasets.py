"""Prompt datasets for GRPO on our envs (HumanEval prompts with their problem index).

Example:
    >>> rows = humaneval_rows([0, 2])
    >>> rows[1]["problem"], rows[1]["prompt"].lstrip().startswith("def truncate_number")
    (2, True)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

__all__ = ["humaneval_rows", "humaneval_dataset"]


def humaneval_rows(problems: Optional[Sequence[int]] = None) -> list[dict[str, Any]]:
    """``{"prompt", "problem", "task_id"}`` rows of HumanEval problems (all 164 by default).

    The prompt is the problem's signature and docstring; the completion continues it,
    which is what ``OpenEnv/Coding-v0``'s task mode runs against the problem's asserts.
    """
    from openenv_gym.envs.coding.humaneval import NUM_PROBLEMS, get_problem

    indices = range(NUM_PROBLEMS) if problems is None else problems
    return [{"prompt": get_problem(i).prompt, "problem": int(i), "task_id": get_problem(i).task_id}
            for i in indices]


def humaneval_dataset(problems: Optional[Sequence[int]] = None) -> Any:
    """A :class:`datasets.Dataset` of :func:`humaneval_rows` (``problem`` feeds ``reset`` options)."""
    from datasets import Dataset

    return Dataset.from_list(humaneval_rows(problems))
