"""Shared values of the TRL adapter tests (the problem the tiny model is nudged toward)."""

from __future__ import annotations

from typing import Any

#: HumanEval/2 (truncate_number): three asserts, a one-line solution.
PROBLEM = 2
SOLUTION = "    return number % 1.0\n"


def grpo_config(tmp_path: Any, **overrides: Any) -> Any:
    """A GRPOConfig for a few CPU steps with a tiny batch."""
    from trl import GRPOConfig

    kwargs: dict[str, Any] = dict(
        output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=4, num_generations=4,
        max_completion_length=12, max_steps=2, learning_rate=1e-4, logging_steps=1,
        report_to="none", use_cpu=True, save_strategy="no", seed=0, temperature=1.0,
    )
    kwargs.update(overrides)
    return GRPOConfig(**kwargs)
