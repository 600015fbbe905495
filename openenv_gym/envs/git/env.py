"""``OpenEnv/Git-v0``: shell commands in a git workspace; reward = weighted checks passed.

Task mode (``task="merge-conflict"``, or ``task="suite"`` to sample a task per episode
with the env's ``np_random``): reset restores the task's start state (a snapshot, no
re-clone); each step runs one shell command; reward is the weighted fraction of the
task's checks that pass (``shaping=True``: its change since the last step). The episode
terminates when every check passes or on ``submit``. Free-form mode (``task=None``): an
empty workspace with an empty ``$REMOTE/origin.git``; reward 0.

Example:
    >>> env = GitEnv(task="create-branch")
    >>> obs, info = env.reset(seed=0)
    >>> obs.checks_passed < obs.checks_total
    True
    >>> for cmd in env.tasks["create-branch"].solution:
    ...     obs, reward, terminated, truncated, info = env.step(env.parse_action({"command": cmd}))
    >>> reward, terminated
    (1.0, True)
    >>> env.close()
"""

from __future__ import annotations

import os
from typing import Any

from openenv_gym._numbers import is_flag
from openenv_gym.envs._exec import OUTPUT_LIMIT, ExecResult, Limits, check_output_limit, step_timeouts
from openenv_gym.envs.base import Environment
from openenv_gym.envs.git.checks import CHECK_BUDGET, run_checks
from openenv_gym.envs.git.models import MAX_BRANCH, GitAction, GitObservation
from openenv_gym.envs.git.tasks import SUITE, Task, load_tasks
from openenv_gym.envs.git.workspace import LIMITS, SHELL_CHECK_TIMEOUT, Workspace
from openenv_gym.errors import InvalidRequestError
from openenv_gym.models import State
from openenv_gym.spaces import short_repr

__all__ = ["GitEnv"]


class GitEnv(Environment):
    """Git tasks in a private workspace with a git server inside the worker.

    Args:
        task: A task name, ``"suite"`` (sample one per episode) or ``None`` (free-form).
        tasks_file: A TOML file of tasks to use instead of the built-in suite.
        shaping: Reward is the change of the score since the last step.
        step_timeout: Seconds per command when the action sets none.
        max_timeout: Cap on a command's timeout.
        output_limit: Bytes of output kept per command.
        limits: :class:`~openenv_gym.envs._exec.Limits` fields to override.
        confine: Hold commands to the workspace with Landlock, where the kernel has it: they
            read the system and the worker's Python, write only the workspace, and connect
            to no TCP port but the worker's git server and to no Unix socket. ``False``
            lets them reach whatever the worker's user can (process provider).
        render_mode: ``"ansi"`` renders the last output.
    """

    action_model = GitAction
    observation_model = GitObservation
    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # render_fps: Gymnasium warns without it

    def __init__(self, task: str | None = None, tasks_file: str | None = None,
                 shaping: bool = False, step_timeout: float = 30.0, max_timeout: float = 120.0,
                 output_limit: int = OUTPUT_LIMIT, limits: dict[str, int | None] | None = None,
                 confine: bool = True, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        self.tasks = load_tasks(tasks_file)
        if task is not None and (not isinstance(task, str) or (task != SUITE and task not in self.tasks)):
            raise ValueError(f"unknown git task {task!r}; use None (free-form), {SUITE!r} or one "
                             f"of: {', '.join(self.tasks)}")
        for flag, value in (("shaping", shaping), ("confine", confine)):
            if not is_flag(value):
                raise ValueError(f"{flag} must be True or False, got {value!r}")
        self.step_timeout, self.max_timeout = step_timeouts(step_timeout, max_timeout)
        check_output_limit(output_limit)
        self.task_name = task
        # A step is its command, then its checks: their git calls share CHECK_BUDGET, and each
        # command/unittest check runs the repository's code for up to SHELL_CHECK_TIMEOUT (an
        # agent's infinite loop in the tested code). A client that waited for the command
        # alone gave the worker up mid-check (WorkerTimeoutError) and lost the session.
        shell_checks = max(sum(check.type in ("command", "unittest") for check in t.checks)
                           for t in self.tasks.values())
        self.max_step_seconds = self.max_timeout + CHECK_BUDGET + shell_checks * SHELL_CHECK_TIMEOUT
        self.shaping = shaping
        self.reward_is_score = not shaping  # shaping: rewards are the score's changes, to be summed
        self.workspace = Workspace(Limits.merged(limits, **LIMITS),
                                   output_limit, confine)
        self.task: Task | None = None
        self.score = 0.0
        self.passed = 0
        self._last = GitObservation()

    # -- episode -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Restore the task's start state (or an empty workspace in free-form mode).

        Args:
            seed: Seeds ``np_random`` (which picks the task with ``task="suite"``).
            options: ``{"task": name}`` plays that task this episode.

        Returns:
            The observation (instruction, checks passed at the start) and ``info``.
        """
        name = (options or {}).get("task", self.task_name)
        if name is not None and (not isinstance(name, str) or (name != SUITE and name not in self.tasks)):
            # The caller's input: refused before anything of the episode changes.
            raise InvalidRequestError(f"options['task'] must be None, {SUITE!r} or a task name, "
                                      f"got {name!r}; known: {', '.join(self.tasks)}")
        super().reset(seed=seed)
        if name == SUITE:
            names = list(self.tasks)
            name = names[int(self.np_random.integers(len(names)))]
        self.task = self.tasks[name] if name is not None else None
        self.workspace.restore(self.task)
        # Every restore of a task is the same state: score it once per worker.
        key = self.task.key if self.task is not None else ""
        cached = self.workspace.shared.start_scores.get(key)
        if cached is None:
            score, passed, note = self._evaluate()
            cached = (score, passed)
            if not note:  # the checks' budget ran out (a loaded machine): not the state's score
                self.workspace.shared.start_scores[key] = cached
        self.score, self.passed = cached
        self._last = self._observe(ExecResult())
        return self._last, self._info()

    def step(self, action: GitAction):
        """Run the command, then score the workspace.

        A ``workdir`` that leaves the workspace, does not exist or cannot be entered (the
        agent took its rights: ``chmod 000``) runs nothing: the observation says so with exit
        code 1, as a shell's failed ``cd`` would, and the episode goes on (an agent's wrong
        folder is its mistake to learn from, not an error that stops a vector env's step for
        every env).

        Returns:
            ``(observation, reward, terminated, truncated, info)``.
        """
        cwd, wrong = self._workdir(action.workdir)
        timeout = min(action.timeout or self.step_timeout, self.max_timeout)
        if wrong:
            result = ExecResult(stdout=f"{wrong} (nothing was run)\n", exit_code=1)
        elif action.command.strip():
            try:
                result = self.workspace.command(action.command, timeout, cwd)
            except OSError as exc:
                if exc.filename != cwd:
                    raise
                # The agent's own doing (chmod 000 of its repo): every later step raised, until
                # a reset. A shell's cd says so too, and a command from the workspace undoes it.
                name = os.path.relpath(str(cwd), os.path.realpath(self.workspace.work))
                result = ExecResult(stdout=f"workdir {short_repr(name)} cannot be entered: "
                                           f"{exc.strerror} (nothing was run)\n", exit_code=1)
        else:
            result = ExecResult()
        previous = self.score
        self.score, self.passed, note = self._evaluate()
        self._last = self._observe(result, cwd, note)
        if self.task is None:
            reward = 0.0
            terminated = action.submit
        else:
            reward = self.score - previous if self.shaping else self.score
            terminated = action.submit or self.passed == len(self.task.checks)
        return self._last, reward, terminated, False, self._info()

    def _workdir(self, workdir: str) -> tuple[str | None, str]:
        """The folder to run in, or None and why ``workdir`` is not one."""
        work = os.path.realpath(self.workspace.work)
        default = self.task.repo if self.task is not None else ""
        path = os.path.realpath(os.path.join(work, workdir or default))
        if path != work and not path.startswith(work + os.sep):
            return None, (f"workdir {short_repr(workdir)} is outside the workspace; give a path "
                          "relative to it, e.g. 'repo'")
        if not os.path.isdir(path):
            if not workdir:
                return work, ""  # the task's repo was removed: run in the workspace
            return None, f"workdir {short_repr(workdir)} does not exist in the workspace"
        return path, ""

    def _evaluate(self) -> tuple[float, int, str]:
        """The score, the checks passed, and a note on checks that ran out of time ("")."""
        if self.task is None:
            return 0.0, 0, ""
        notes: list[str] = []
        results = run_checks(self.workspace, self.task.repo,
                             [(check.type, check.params) for check in self.task.checks], notes)
        got = sum(check.weight for check, ok in zip(self.task.checks, results) if ok)
        return got / self.task.total_weight, sum(results), "".join(n + "\n" for n in notes)

    def _observe(self, result: ExecResult, cwd: str | None = None, note: str = "") -> GitObservation:
        output = result.stdout
        if note:  # after the command's output, as a terminal shows what ran last
            output += ("\n" if output and not output.endswith("\n") else "") + note
        return GitObservation(
            output=output, exit_code=max(-255, min(255, result.exit_code)),
            timed_out=result.timed_out, branch=self._branch(cwd),
            instruction=self.task.instruction if self.task else "",
            checks_passed=self.passed, checks_total=len(self.task.checks) if self.task else 0,
        )

    def _branch(self, cwd: str | None) -> str:
        # Read HEAD directly: one file read instead of a git process per step.
        start = cwd or os.path.join(self.workspace.work, self.task.repo if self.task else "")
        path = os.path.realpath(start)
        work = os.path.realpath(self.workspace.work)
        base = os.path.realpath(self.workspace.base)
        while (path == work or path.startswith(work + os.sep)) and not _is_repository_top(path):
            path = os.path.dirname(path)  # as git does: the nearest enclosing repository
        if path != work and not path.startswith(work + os.sep):
            return ""
        try:
            head = _head_file(path, base)
            ref = _read_start(head).strip() if head else ""
        except OSError:
            # The agent's to make unreadable (chmod 000 .git/HEAD, as the worker's user
            # where it is not root): no branch, not a failed step until the reset.
            return ""
        if head is None:
            return ""
        branch = (ref[len("ref: refs/heads/"):] if ref.startswith("ref: refs/heads/")
                  else "(detached HEAD)")
        # HEAD is the agent's to write: a name longer than the field holds is cut,
        # not a broken observation on every step until the next reset.
        return branch[:MAX_BRANCH]

    def _info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"score": self.score, "remote": self.workspace.remote_url}
        if self.task is not None:
            info["task"] = self.task.name
            info["category"] = self.task.category
        return info

    def render(self) -> str:
        """The last command's output and the task's progress (``render_mode="ansi"``)."""
        obs = self._last
        return (f"{obs.output}\n[exit {obs.exit_code}] branch {obs.branch or '-'}; "
                f"checks {obs.checks_passed}/{obs.checks_total}")

    def state(self) -> State:
        return State(task=self.task.name if self.task else None, score=self.score,
                     checks_passed=self.passed, workspace=self.workspace.work)

    def close(self) -> None:
        """Remove the env's workspace."""
        self.workspace.close()
        super().close()


def _read_start(path: str) -> str:
    """The start of a file of the agent's: enough for a ref or a ``gitdir:`` line."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read(MAX_BRANCH + 4096)


def _is_repository_top(folder: str) -> bool:
    """Whether ``folder`` is the top of a repository, as git tells: its ``.git`` is a folder
    holding a HEAD, or a file (``gitdir: ...``). If not, git looks in its parent."""
    dot_git = os.path.join(folder, ".git")
    if os.path.isdir(dot_git):
        return os.path.lexists(os.path.join(dot_git, "HEAD"))
    return os.path.isfile(dot_git)


def _head_file(folder: str, base: str) -> str | None:
    """The HEAD file of the repository whose top is ``folder``, or None if it leads nowhere
    readable in ``base``.

    ``.git`` may be a file naming the repository's folder (``gitdir: ...``): a linked
    worktree (``git worktree add``), a submodule, ``git init --separate-git-dir``. Only
    files in the env's folder ``base`` (what its commands may write), that ``.git`` file
    and HEAD alike, are read: the agent's links could lead anywhere, and the worker reads
    them unconfined.
    """
    git_dir = os.path.join(folder, ".git")
    if not os.path.isdir(git_dir):
        if not _inside(os.path.realpath(git_dir), base):
            return None
        line = _read_start(git_dir).split("\n", 1)[0]
        if not line.startswith("gitdir: "):
            return None
        git_dir = os.path.join(folder, line[len("gitdir: "):].strip())
    head = os.path.realpath(os.path.join(git_dir, "HEAD"))
    return head if _inside(head, base) and os.path.isfile(head) else None


def _inside(path: str, base: str) -> bool:
    return path.startswith(base + os.sep)
