"""Prompt datasets for GRPO on our envs, and how a dataset row picks its episode's task.

Example:
    >>> rows = humaneval_rows([0, 2])
    >>> rows[1]["problem"], rows[1]["prompt"].lstrip().startswith("def truncate_number")
    (2, True)
    >>> task = RowTask(option_columns=("problem",), seed_column="seed")
    >>> task.options(rows[1]), task.seed({"seed": 7})
    ({'problem': 2}, 7)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

from openenv_gym.errors import InvalidRequestError

if TYPE_CHECKING:
    from openenv_gym.catalog import EnvInfo

__all__ = ["humaneval_rows", "humaneval_dataset", "RowTask", "OptionsFn", "drawn_task", "row_task"]

#: ``options_fn(row) -> reset options``; ``row`` holds the sample's prompt and dataset columns.
OptionsFn = Callable[[Mapping[str, Any]], Optional[dict[str, Any]]]


def drawn_task(info: EnvInfo, env_kwargs: Mapping[str, Any]) -> Optional[tuple[str, str]]:
    """Whether an env made with ``env_kwargs`` draws its task at each reset (from its seed), as
    its catalog entry's :attr:`~openenv_gym.catalog.EnvInfo.drawn_task` says.

    A model that is not shown the reset's observation never sees a task drawn so: its
    answer must be graded against the task of its own dataset row, named in ``reset``'s
    options.

    Args:
        info: The env's catalog entry.
        env_kwargs: The env's arguments.

    Returns:
        ``(option, how)``: the ``reset`` option naming the task and the argument that makes
        the env draw (``("problem", "task='humaneval'")``); None when it draws none.

    Example:
        >>> from openenv_gym.catalog import get_env_info
        >>> coding = get_env_info("coding")
        >>> drawn_task(coding, {"task": "humaneval"}), drawn_task(coding, {"task": "humaneval/2"})
        (('problem', "task='humaneval'"), None)
    """
    if info.drawn_task is None:
        return None
    arg, value, option = info.drawn_task
    if env_kwargs.get(arg) != value:
        return None
    return option, f"{arg}={value!r}"


@dataclass(frozen=True)
class RowTask:
    """The ``reset`` options and seed a dataset row asks for (one rule for every adapter).

    Args:
        option_columns: Columns passed as ``reset`` options (``("problem",)``).
        options_fn: ``row -> options`` instead of ``option_columns``.
        seed_column: Column holding ``reset``'s seed.
        seed_fn: ``row -> seed`` when there is no ``seed_column`` (None: no seed).
        why: Why ``option_columns`` are needed, added to the error for a row without them.

    Raises:
        InvalidRequestError: Both ``option_columns`` and ``options_fn`` were given (a ``ValueError``).
    """

    option_columns: Sequence[str] = ()
    options_fn: Optional[OptionsFn] = None
    seed_column: Optional[str] = None
    seed_fn: Optional[Callable[[Mapping[str, Any]], Optional[int]]] = None
    why: str = ""

    def __post_init__(self) -> None:
        if self.option_columns and self.options_fn is not None:
            raise InvalidRequestError("pass option_columns or options_fn, not both")
        object.__setattr__(self, "option_columns", tuple(self.option_columns))

    def options(self, row: Mapping[str, Any]) -> Optional[dict[str, Any]]:
        """The row's ``reset`` options.

        Raises:
            KeyError: A column of ``option_columns`` is missing, named with the row's columns.
        """
        if self.options_fn is not None:
            return self.options_fn(row)
        if not self.option_columns:
            return None
        missing = [c for c in self.option_columns if c not in row]
        if missing:
            raise KeyError(f"dataset has no column(s) {missing} (option_columns); the row has: "
                           f"{sorted(row)}{'. ' + self.why if self.why else ''}")
        return {c: plain(row[c]) for c in self.option_columns}

    def seed(self, row: Mapping[str, Any]) -> Optional[int]:
        """The row's ``reset`` seed.

        Raises:
            KeyError: ``seed_column`` is missing from the row.
        """
        if self.seed_column is None:
            return self.seed_fn(row) if self.seed_fn is not None else None
        if self.seed_column not in row:
            raise KeyError(f"dataset has no column {self.seed_column!r} (seed_column); the row has: {sorted(row)}")
        return int(plain(row[self.seed_column]))


def row_task(pool: Any, option_columns: Sequence[str], options_fn: Optional[OptionsFn],
             seed_column: Optional[str], *, task_shown: bool, adapter: str) -> RowTask:
    """How an adapter over ``pool`` picks each episode's task from a dataset row.

    Without ``seed_column`` the seed comes from the prompt
    (:func:`~openenv_gym.trl.rollout.prompt_seed`): every completion of a GRPO group gets the
    same reset. Without ``option_columns`` or ``options_fn``, a pool whose env draws its
    task at each reset (:func:`drawn_task`) that the model is not shown takes it from the
    row's column of the task's option (``"problem"``): a row without it raises ``KeyError``
    rather than grade the answer against a task its prompt did not pose.

    Args:
        pool: The :class:`~openenv_gym.trl.pool.EnvPool`.
        option_columns: As :class:`RowTask`'s.
        options_fn: As :class:`RowTask`'s.
        seed_column: As :class:`RowTask`'s.
        task_shown: Whether the model sees the reset observation, which poses a drawn task.
        adapter: The adapter's name, for the error.
    """
    from openenv_gym.trl.rollout import prompt_seed

    why = ""
    drawn = drawn_task(pool.info, pool.env_kwargs)
    if not option_columns and options_fn is None and not task_shown and drawn is not None:
        option_columns = (drawn[0],)
        # humaneval_dataset() is named only where it helps: a Git dataset needs a 'task' column.
        example = " (humaneval_dataset() has 'problem')" if drawn[0] == "problem" else ""
        why = (f"The pool's env draws a task at each reset ({drawn[1]}) and {adapter} does not "
               "show it to the model, so each answer is graded against the task its row names: "
               f"add the column{example}, or pass option_columns= or options_fn=")
    return RowTask(option_columns, options_fn, seed_column,
                   seed_fn=lambda row: prompt_seed(row.get("prompt")), why=why)


def plain(value: Any) -> Any:
    """``value`` as a plain Python value: dataset columns arrive as numpy/torch scalars at
    times, and the wire wants plain values."""
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "ndim", 1) == 0 else value


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
    """A :class:`datasets.Dataset` of :func:`humaneval_rows` (``problem`` feeds ``reset`` options).

    Args:
        problems: The HumanEval problem numbers (default: all 164).

    Returns:
        A dataset with ``prompt``, ``problem`` and ``task_id`` columns (needs ``datasets``).

    Example:
        >>> humaneval_dataset([0, 2]).column_names
        ['prompt', 'problem', 'task_id']
    """
    from datasets import Dataset

    return Dataset.from_list(humaneval_rows(problems))
