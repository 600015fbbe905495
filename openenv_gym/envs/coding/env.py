"""``OpenEnv/Coding-v0``: run untrusted Python with limits; reward by exit code or by tests.

Free-form mode (``task=None``): each step runs the action's code in a fresh child
process (or, with ``persistent=True``, as a cell of one interpreter kept for the episode);
reward is 1 on a clean exit, else 0 — or whatever a server-side ``reward_fn`` returns.

Task mode (``task="humaneval"`` samples one of 164 problems at reset with the env's
``np_random``; ``task="humaneval/17"`` picks one): the action completes the prompt, and
reward is the fraction of the problem's checks that pass, each run on its own (see
:mod:`openenv_gym.envs.coding.humaneval`). The episode terminates when all pass or after
``max_attempts`` steps. An empty completion is not run and scores 0. A failed check is
reported by number and error type only (``check 3 of 7 failed (AssertionError)``), unless
``show_failed_checks=True``.

Every reset empties everything the sandbox's code could write to, not just the last
step's directory, after stopping the interpreter (``persistent=True``), so an episode
starts with nothing of an earlier one on disk.

Example:
    >>> env = CodingEnv(task="humaneval/0")
    >>> obs, info = env.reset(seed=0)
    >>> info["task_id"], obs.tests_total
    ('HumanEval/0', 7)
    >>> from openenv_gym.envs.coding.humaneval import get_problem
    >>> action = env.parse_action({"code": get_problem(0).canonical_solution})
    >>> obs, reward, terminated, truncated, info = env.step(action)
    >>> reward, terminated
    (1.0, True)
    >>> env.close()
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from openenv_gym._numbers import is_finite, is_flag, is_int
from openenv_gym.envs._exec import OUTPUT_LIMIT, ExecResult, Limits, check_output_limit, step_timeouts
from openenv_gym.envs.base import Environment
from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import NUM_PROBLEMS, Problem, get_problem
from openenv_gym.envs.coding.models import CodeAction, CodeObservation
from openenv_gym.envs.coding.sandbox import Repl, Sandbox
from openenv_gym.errors import InvalidRequestError
from openenv_gym.models import State

__all__ = ["CodingEnv", "RewardFn"]

#: ``reward_fn(action, observation) -> float``, called in the worker after each step.
RewardFn = Callable[[CodeAction, CodeObservation], float]

TASKS = ("humaneval",)


class CodingEnv(Environment):
    """Runs Python from the agent in a fresh, limited child process per step.

    Each step's reward rates the program it ran (:attr:`reward_is_score`): an episode of
    several attempts is worth its last one (a ``reward_fn`` that pays for progress instead
    wants ``EnvPool(reward_mode="return")``).

    Args:
        task: ``None`` (free-form), ``"humaneval"`` (a random problem per episode) or
            ``"humaneval/N"`` (problem N).
        max_attempts: Task mode: steps per episode before it terminates.
        step_timeout: Wall-clock seconds per step when the action sets no timeout.
        max_timeout: Cap on a step's timeout, whatever the action asks.
        per_check_timeout: Task mode: seconds each check may take.
        persistent: Free-form: keep one interpreter per episode (REPL-like).
        reward_fn: Free-form: ``"module:function"`` (or a callable, in-process) returning
            the reward from ``(action, observation)``.
        memory_mb: Address-space limit of the child.
        output_limit: Bytes kept of stdout and of stderr.
        limits: Other :class:`~openenv_gym.envs._exec.Limits` fields to override.
        confine: Hold the code to its working directory with Landlock, where the kernel has
            it: it reads the system and the interpreter's packages (not the HumanEval data),
            writes only its own folder, creates no socket. ``False`` lets it read and
            write whatever the worker's user can (process provider).
        show_failed_checks: Task mode: add each failed check's source and error message to
            ``stderr`` (``assert candidate(1.33) == 0.33``). They show the agent the
            expected answers, which it can hard-code in its next attempt: for debugging,
            or with ``max_attempts=1``. By default only the check's number and error type.
        render_mode: ``"ansi"`` renders the last output.
    """

    action_model = CodeAction
    observation_model = CodeObservation
    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # render_fps: Gymnasium warns without it
    reward_is_score = True

    def __init__(self, task: str | None = None, max_attempts: int = 1, step_timeout: float = 10.0,
                 max_timeout: float = 60.0, per_check_timeout: float = 3.0,
                 persistent: bool = False, reward_fn: str | RewardFn | None = None,
                 memory_mb: int = 1024, output_limit: int = OUTPUT_LIMIT,
                 limits: dict[str, int | None] | None = None, confine: bool = True,
                 show_failed_checks: bool = False, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        self._fixed_problem = _parse_task(task)
        if not is_int(max_attempts, 1):
            raise ValueError(f"max_attempts must be a whole number >= 1, got {max_attempts!r}")
        if not (is_finite(per_check_timeout) and per_check_timeout > 0):
            # <= 0 or NaN fails every check: a correct completion would score 0.
            raise ValueError(f"per_check_timeout must be a positive, finite number of seconds, "
                             f"got {per_check_timeout!r}")
        if not is_int(memory_mb, 1):
            raise ValueError(f"memory_mb must be a whole number of MiB >= 1, got {memory_mb!r}")
        for flag, value in (("persistent", persistent), ("confine", confine),
                            ("show_failed_checks", show_failed_checks)):
            if not is_flag(value):
                raise ValueError(f"{flag} must be True or False, got {value!r}")
        check_output_limit(output_limit)
        self.step_timeout, self.max_timeout = step_timeouts(step_timeout, max_timeout)
        self.max_step_seconds = self.max_timeout
        if persistent and task is not None:
            raise ValueError("persistent=True is for free-form mode; task mode runs every "
                             "attempt in a fresh process")
        self.task = task
        self.max_attempts = max_attempts
        self.per_check_timeout = float(per_check_timeout)
        self.persistent = persistent
        self.show_failed_checks = bool(show_failed_checks)
        self.reward_fn = _load_reward_fn(reward_fn)
        self.limits = Limits.merged(limits, memory_bytes=int(memory_mb) << 20)
        self.sandbox = Sandbox(self.limits, output_limit, confine=confine)
        self.repl = Repl(self.sandbox) if persistent else None
        # Private: the server answers get_attr/call for public names only, and a problem
        # holds its tests and canonical solution.
        self._problem: Problem | None = None
        self.attempts = 0
        self._last = CodeObservation()

    # -- episode -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: an empty sandbox (and a new interpreter), maybe a new problem.

        Nothing an earlier episode wrote is left, wherever in the sandbox it wrote it.

        Args:
            seed: Seeds ``np_random`` (which picks the problem with ``task="humaneval"``).
            options: ``{"problem": N}`` picks problem N for this episode (task mode).

        Returns:
            The observation (the prompt in task mode) and ``info`` with ``task_id``.

        Raises:
            InvalidRequestError: ``options["problem"]`` is no problem number (the caller's
                input: checked before anything of the episode changes), or is given to a
                free-form env (``task=None``), which grades no problem.
        """
        if self.task is None and (options or {}).get("problem") is not None:
            # Ignored, it turned a graded setup into free-form without a word: EnvReward with
            # option_columns=("problem",) over a pool made without task= paid 1.0 for any
            # program that exited cleanly, whatever the problem's asserts said.
            raise InvalidRequestError(
                f"options['problem'] picks a HumanEval problem, but this env is free-form "
                f"(task=None) and grades none: make it with task='humaneval' (then "
                f"options['problem'] picks the problem), or leave the option out")
        index = (options or {}).get("problem", self._fixed_problem) if self.task is not None else None
        # Any whole number: a numpy integer (a problem drawn with rng.integers) is one too.
        if index is not None and not is_int(index, 0, NUM_PROBLEMS - 1):
            raise InvalidRequestError(f"options['problem'] must be an integer in 0..{NUM_PROBLEMS - 1} "
                                      f"(a HumanEval problem number), got {index!r}")
        super().reset(seed=seed)
        if self.repl is not None:
            self.repl.stop()  # first: a live interpreter could write again after the sweep
        self.sandbox.fresh_workdir()
        self.attempts = 0
        if self.task is not None:
            if index is None:
                index = int(self.np_random.integers(NUM_PROBLEMS))
            self._problem = get_problem(int(index))
        if self.repl is not None:
            self.repl.start()
        self._last = self._observe(ExecResult(), passed=0)
        return self._last, self._info()

    def step(self, action: CodeAction):
        """Run the code (free-form) or test the completion (task mode).

        Returns:
            ``(observation, reward, terminated, truncated, info)``.
        """
        timeout = min(action.timeout or self.step_timeout, self.max_timeout)
        self.attempts += 1
        if self._problem is not None:
            return self._step_task(action, timeout)
        if self.repl is not None:
            result = self.repl.run_cell(action.code, timeout)
        else:
            result = self.sandbox.run_code(action.code, timeout)
        obs = self._last = self._observe(result, passed=0)
        if self.reward_fn is not None:
            reward = float(self.reward_fn(action, obs))
        else:
            reward = 1.0 if result.exit_code == 0 and not result.timed_out else 0.0
        return obs, reward, False, False, self._info(result)

    def _step_task(self, action: CodeAction, timeout: float):
        problem = self._problem
        assert problem is not None
        if not action.code.strip():
            result = ExecResult(stderr="empty completion: nothing was run; it scores 0\n", exit_code=1)
            passed: set[int] = set()
        else:
            result, passed = grade(self.sandbox, problem.prompt + action.code, problem, timeout,
                                   min(self.per_check_timeout, timeout), self.show_failed_checks)
        obs = self._last = self._observe(result, passed=len(passed))
        reward = len(passed) / problem.num_checks
        terminated = len(passed) == problem.num_checks or self.attempts >= self.max_attempts
        return obs, reward, terminated, False, self._info(result)

    def _observe(self, result: ExecResult, passed: int) -> CodeObservation:
        return CodeObservation(
            stdout=result.stdout, stderr=result.stderr, exit_code=max(-255, min(255, result.exit_code)),
            timed_out=result.timed_out, wall_time=result.wall_time,
            prompt=self._problem.prompt if self._problem else "",
            tests_passed=passed, tests_total=self._problem.num_checks if self._problem else 0,
        )

    def _info(self, result: ExecResult | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {"attempt": self.attempts}
        if self._problem is not None:
            info["task_id"] = self._problem.task_id
            info["entry_point"] = self._problem.entry_point
        if result is not None:
            info["output_truncated"] = result.truncated
        return info

    def render(self) -> str:
        """The last step's output as text (``render_mode="ansi"``)."""
        obs = self._last
        text = obs.stdout + (f"\n[stderr]\n{obs.stderr}" if obs.stderr else "")
        return text + f"\n[exit {obs.exit_code}{', timed out' if obs.timed_out else ''}]"

    def state(self) -> State:
        return State(task=self.task, task_id=self._problem.task_id if self._problem else None,
                     attempts=self.attempts, max_attempts=self.max_attempts,
                     persistent=self.persistent)

    def close(self) -> None:
        """Kill the interpreter (if any) and remove the env's folder."""
        if self.repl is not None:
            self.repl.stop()
        self.sandbox.close()
        super().close()


def _parse_task(task: str | None) -> int | None:
    if task is None:
        return None
    if not isinstance(task, str):
        raise ValueError(f"task must be None (free-form), 'humaneval' or 'humaneval/N', got {task!r}")
    name, _, number = task.partition("/")
    if name not in TASKS:
        raise ValueError(f"unknown task {task!r}; use None (free-form), 'humaneval' or 'humaneval/N'")
    if not number:
        return None
    if not number.isdigit() or not 0 <= int(number) < NUM_PROBLEMS:
        raise ValueError(f"task {task!r}: N must be 0..{NUM_PROBLEMS - 1}")
    return int(number)


def _load_reward_fn(spec: str | RewardFn | None) -> RewardFn | None:
    if spec is None or callable(spec):
        return spec
    module, _, attr = str(spec).partition(":")
    if not module or not attr:
        raise ValueError(f"reward_fn must be 'module:function', got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        # Not a missing extra of the env's (the worker's ModuleNotFoundError handling would
        # say "pip install 'openenv-gym[coding]'"): the caller's reward_fn names nothing.
        raise ValueError(f"reward_fn {spec!r} cannot be loaded in the worker: {exc}; name an "
                         "importable 'module:function'") from None
    if not callable(fn):
        raise ValueError(f"reward_fn {spec!r} is not callable")
    return fn
