"""The declarative task format of Git-v0, and the built-in suite (``tasks.toml``).

A task is a TOML table::

    [[task]]
    name = "merge-conflict"
    category = "merging"
    instruction = "Merge `feature` into `main` ..."
    repo = "repo"                     # folder under the workspace (default "repo")
    setup = ["new_repo", "commit app.py 'x = 1' 'Initial commit'", ...]
    solution = ["git merge feature", ...]
    [[task.checks]]
    type = "no_conflict_markers"
    weight = 2

``setup`` steps run once per worker as one ``bash -eu`` script in the workspace, with
helpers (``new_repo``, ``commit FILE CONTENT MESSAGE``, ``as NAME EMAIL``, ``tick``) and
fixed author, committer and dates (each commit one minute after the last), so commit
ids are the same on every machine. ``$REMOTE`` is the base URL of the in-worker git
server, ``$REMOTES`` the folder of the bare remote repositories. ``solution`` is the
reference solution: commands that, run as actions in order, score 1.0. Check types and
their fields are in :mod:`openenv_gym.envs.git.checks`; a revision field written as
``:/message`` names the commit with that message right after setup (its id is recorded
then), never one the agent makes later.

Example:
    >>> suite = load_tasks()
    >>> len(suite) >= 20, suite["merge-conflict"].category
    (True, 'merging')
"""

from __future__ import annotations

import hashlib
import inspect
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from openenv_gym._numbers import is_finite
from openenv_gym.envs.git.models import MAX_INSTRUCTION
from openenv_gym.errors import InvalidDataError

__all__ = ["Task", "Check", "load_tasks", "SETUP_PRELUDE", "BUILTIN_TASKS", "SUITE"]

#: The built-in suite.
BUILTIN_TASKS = Path(__file__).with_name("tasks.toml")
#: The ``task=`` value that draws a task per episode: no task may take it as its name.
SUITE = "suite"

#: Shell helpers every setup script starts with (2024-01-01T12:00:00Z, one minute a commit).
SETUP_PRELUDE = r"""
set -euo pipefail
T=1704110400
as() { export GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2"; }
tick() { T=$((T + 60)); export GIT_AUTHOR_DATE="@$T +0000" GIT_COMMITTER_DATE="@$T +0000"; }
commit() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; git add -- "$1"; tick; git commit -q -m "$3"; }
new_repo() { git init -q --bare "$REMOTES/${2:-origin}.git"; git init -q "${1:-repo}"; cd "${1:-repo}"; git remote add origin "$REMOTE/${2:-origin}.git"; }
as "Ada Lovelace" "ada@example.com"
tick
"""


@dataclass(frozen=True)
class Check:
    """One weighted check on the final state.

    Attributes:
        type: A name in :data:`openenv_gym.envs.git.checks.CHECKS`.
        weight: Its share of the reward.
        params: Its other fields (``branch``, ``path``, ``rev``, ...).
    """

    type: str
    weight: float = 1.0
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """A git task: start state, instruction, reference solution and checks.

    Attributes:
        name: Unique id (``task="merge-conflict"``).
        category: Branching, committing, merging, rebasing, ...
        instruction: What the agent is asked to do.
        setup: Shell steps that build the start state.
        solution: Commands that solve it (run as actions, in order).
        checks: What the reward is a weighted fraction of.
        repo: The task's repository folder under the workspace (the default workdir).
    """

    name: str
    category: str
    instruction: str
    setup: tuple[str, ...]
    solution: tuple[str, ...]
    checks: tuple[Check, ...]
    repo: str = "repo"

    @property
    def key(self) -> str:
        """A path-safe id of this exact task (same name, different setup: different key)."""
        digest = hashlib.sha1(repr((self.setup, self.checks, self.repo)).encode()).hexdigest()[:10]
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.name)[:60] + "-" + digest

    @property
    def total_weight(self) -> float:
        """Sum of the check weights."""
        return sum(c.weight for c in self.checks)

    def setup_script(self) -> str:
        """The whole setup as one bash script."""
        return SETUP_PRELUDE + "\n".join(self.setup) + "\n"


def _steps(value: str | list[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(str(v) for v in value)


def _check_fields(where: str, check: Callable[..., bool], fields: dict[str, Any]) -> None:
    # A check runs with a misspelled or missing field as failed (run_check never raises):
    # the task could not be solved, and nothing said why.
    params = list(inspect.signature(check).parameters.values())[2:]  # after (ctx, repo)
    names = ", ".join(p.name if p.default is inspect.Parameter.empty else f"{p.name} (optional)"
                      for p in params) + ", repo (optional)"
    unknown = sorted(set(fields) - {p.name for p in params} - {"repo"})
    if unknown:
        raise ValueError(f"{where}: unknown field {', '.join(map(repr, unknown))}; its fields: {names}")
    try:
        inspect.signature(check).bind(None, "", **{k: v for k, v in fields.items() if k != "repo"})
    except TypeError as exc:
        raise ValueError(f"{where}: {exc}; its fields: {names}") from None


def _check_folder(where: str, folder: Any) -> None:
    # The default workdir and where the checks look: one outside the workspace made every
    # step without a workdir run nothing ("workdir '' is outside the workspace").
    if not isinstance(folder, str) or os.path.isabs(folder) or \
            os.path.normpath(folder).split(os.sep)[0] == os.pardir:
        raise ValueError(f"{where} must be a folder relative to the workspace that stays in it "
                         f"(\"repo\", \"clones/app\"), got {folder!r}")


def _task(raw: dict[str, Any], source: str) -> Task:
    from openenv_gym.envs.git.checks import CHECKS

    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{source}: a task has no name")
    if name == SUITE:
        # task="suite" draws a task per episode: a task of that name could not be chosen.
        raise ValueError(f"{source}: a task cannot be named {SUITE!r} (task={SUITE!r} draws "
                         "one of the tasks per episode); rename it")
    checks = []
    raw_checks = raw.get("checks", [])
    if not isinstance(raw_checks, list) or not all(isinstance(c, dict) for c in raw_checks):
        raise ValueError(f"{source}: task {name!r}: checks must be a list of tables, "
                         "e.g. checks = [{ type = \"branch_exists\", branch = \"main\" }]")
    for c in raw_checks:
        c = dict(c)
        kind = c.pop("type", None)
        if kind not in CHECKS:
            raise ValueError(f"{source}: task {name!r}: unknown check type {kind!r}; "
                             f"known: {', '.join(sorted(CHECKS))}")
        weight = c.pop("weight", 1.0)
        if not (is_finite(weight) and weight > 0):
            # NaN or an infinity made every reward NaN.
            raise ValueError(f"{source}: task {name!r}: check weights must be finite numbers "
                             f"> 0, got {weight!r}")
        _check_fields(f"{source}: task {name!r}: check {kind!r}", CHECKS[kind], c)
        if "repo" in c:
            _check_folder(f"{source}: task {name!r}: check {kind!r}: repo", c["repo"])
        checks.append(Check(kind, float(weight), c))
    if not checks:
        raise ValueError(f"{source}: task {name!r} has no checks")
    instruction = raw.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        # It was read at first as raw["instruction"]: a bare KeyError from the worker.
        raise ValueError(f"{source}: task {name!r} has no instruction: give it "
                         "instruction = \"what the agent is asked to do\"")
    instruction = instruction.strip()
    if len(instruction) > MAX_INSTRUCTION:
        # Every observation carries it: a longer one failed every reset of the task.
        raise ValueError(f"{source}: task {name!r}: its instruction has {len(instruction)} "
                         f"characters; an observation holds at most {MAX_INSTRUCTION}")
    repo = raw.get("repo", "repo")
    _check_folder(f"{source}: task {name!r}: repo", repo)
    return Task(name=name, category=str(raw.get("category", "misc")),
                instruction=instruction, setup=_steps(raw.get("setup", [])),
                solution=_steps(raw.get("solution", [])), checks=tuple(checks),
                repo=repo)


def load_tasks(path: str | Path | None = None) -> dict[str, Task]:
    """Read a task file (default: the built-in suite).

    Args:
        path: A TOML file of ``[[task]]`` tables.

    Returns:
        Tasks by name, in file order.

    Raises:
        ValueError: A task is malformed (the message names it and the problem), or the file
            has none.
        InvalidDataError: The file cannot be read or is not TOML.
    """
    source = Path(path) if path is not None else BUILTIN_TASKS
    try:
        with open(source, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise InvalidDataError(f"tasks_file {str(source)!r} cannot be read: {exc.strerror or exc}; "
                               "give a TOML file the worker can read (with the docker provider, "
                               "inside the container)") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidDataError(f"tasks_file {str(source)!r} is not valid TOML: {exc}") from None
    raw_tasks = data.get("task", [])
    if not isinstance(raw_tasks, list) or not all(isinstance(raw, dict) for raw in raw_tasks):
        raise ValueError(f"{source}: each task must be a [[task]] table")
    if not raw_tasks:
        # task="suite" drew from none of them: a bare "high <= 0" from numpy at every reset.
        raise ValueError(f"{source}: the file has no [[task]] table")
    tasks: dict[str, Task] = {}
    for raw in raw_tasks:
        task = _task(raw, str(source))
        if task.name in tasks:
            raise ValueError(f"{source}: task {task.name!r} is defined twice")
        tasks[task.name] = task
    return tasks
