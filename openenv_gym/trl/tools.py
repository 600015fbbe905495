"""Tool environments for TRL's ``GRPOTrainer(environment_factory=...)``: the model calls our env.

With ``environment_factory`` (TRL ≥ 1.16, experimental there) TRL runs the agent loop
itself: it makes one environment per concurrent rollout, calls its ``reset(**row)`` with
the dataset row before generation (a returned string is appended to the prompt), offers
every other public method to the model as a tool, runs the tool calls the model writes,
and calls ``get_reward()`` when the rollout ends. Each environment here is one session,
leased from an :class:`~openenv_gym.trl.pool.EnvPool`, on a sandboxed worker:

* :class:`CodingTools` — tool ``run_python(code)`` on ``OpenEnv/Coding-v0``; in task mode
  the code is graded against the task's tests.
* :class:`GitTools` — tool ``shell(command)`` on ``OpenEnv/Git-v0``; ``reset`` returns the
  task's instruction.

:func:`tool_env_factory` picks the class for a pool. A failed call (timeout, crashed
worker, refused action) raises, which TRL shows the model as the tool's error and counts
as a tool failure; the episode then scores the pool's failure reward. A failed ``reset``
does not raise (it would end TRL's training step): the calls after it raise its failure. Arguments that do not
fit the env's action (a number for ``command``, code past the size cap) raise
:class:`~openenv_gym.errors.InvalidActionError` before anything is sent, and the episode
goes on, as after a call missing its argument.

Example:
    >>> from openenv_gym.trl import EnvPool
    >>> pool = EnvPool("coding", num_workers=1, provider="process")
    >>> env = tool_env_factory(pool)()
    >>> env.reset(prompt="Print 42.")
    >>> print(env.run_python("print(6 * 7)"), end="")
    42
    [exit_code: 0]
    >>> env.get_reward()
    1.0
    >>> pool.close()
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from openenv_gym.errors import (
    InvalidActionError,
    InvalidRequestError,
    OpenEnvError,
    WorkerCrashedError,
    WorkerTimeoutError,
)
from openenv_gym.trl.datasets import OptionsFn, row_task
from openenv_gym.trl.formats import ObservationFn, default_observation_fn
from openenv_gym.trl.pool import EnvPool

__all__ = ["EnvTools", "CodingTools", "GitTools", "tool_env_factory"]

#: The error a failed call raises, by failure kind; an env's own refusal ("env_error") is an
#: OpenEnvError whose message names the env's error type.
_FAILURES: dict[str, type[OpenEnvError]] = {"timeout": WorkerTimeoutError, "crash": WorkerCrashedError}


class EnvTools:
    """One session of an :class:`EnvPool` driven by TRL's tool loop (base of the tool envs).

    Only ``reset`` and ``get_reward`` are public here: TRL offers every other public
    method of the class to the model as a tool, so subclasses add exactly their tools.

    Args:
        pool: The workers hosting the sessions (its ``reward_mode`` combines the steps'
            rewards: ``"final"`` for Git and Coding tasks, where each step scores the
            whole attempt).
        option_columns: Dataset columns passed as ``reset`` options (``("problem",)``).
            Default: none, but the column of the task's option (``"problem"``) when the
            pool's env draws a task at each reset and ``reset`` does not show it (Coding's
            ``task="humaneval"``; see :func:`~openenv_gym.trl.datasets.row_task`).
        options_fn: ``row -> options`` instead of ``option_columns``.
        seed_column: Dataset column holding ``reset``'s seed; without it the seed comes
            from the prompt (:func:`~openenv_gym.trl.rollout.prompt_seed`), so every
            rollout of a GRPO group gets the same task.
        observation_fn: ``observation -> text`` returned by tools and ``reset`` (default:
            :func:`~openenv_gym.trl.formats.default_observation_fn`, which poses the task
            at reset only, not again in every tool result).
        show_reset_observation: Return the reset observation's text from ``reset`` (TRL
            appends it to the prompt's last message as it is, so it starts with a blank
            line); None: the class's choice.

    Example:
        >>> class EchoTools(EnvTools):
        ...     def say(self, message: str) -> str:
        ...         "Say something; the env echoes it. Args: message: What to say."
        ...         return self._act({"message": message})
        >>> with EnvPool("echo", num_workers=1, provider="process") as pool:
        ...     tools = EchoTools(pool)
        ...     tools.reset(prompt="hi")
        ...     tools.say("hello").splitlines()[0], tools.get_reward()
        ('hello', 0.5)
    """

    #: Whether ``reset`` returns the observation's text by default (Git poses its task there).
    show_reset_observation: bool = False

    def __init__(self, pool: EnvPool, *, option_columns: Sequence[str] = (),
                 options_fn: Optional[OptionsFn] = None, seed_column: Optional[str] = None,
                 observation_fn: Optional[ObservationFn] = None,
                 show_reset_observation: Optional[bool] = None) -> None:
        self._pool = pool
        self._observation_fn = observation_fn or default_observation_fn(pool.info.name)
        self._reset_text_fn = observation_fn or default_observation_fn(pool.info.name, task=True)
        if show_reset_observation is not None:
            self.show_reset_observation = show_reset_observation
        self._task = row_task(pool, option_columns, options_fn, seed_column,
                              task_shown=self.show_reset_observation, adapter=type(self).__name__)
        from openenv_gym.vector.precheck import action_checker

        #: The worker's own check of an action, run here first (None: the worker only).
        self._check_action = action_checker(pool.spec, pool.action_space)
        [self._episode] = pool.open(1)

    @property
    def outcome(self) -> Any:
        """The current episode so far (:class:`~openenv_gym.trl.outcome.EpisodeOutcome`)."""
        return self._episode.outcome

    def reset(self, **row: Any) -> Optional[str]:
        """Start a new episode for a dataset row (TRL passes the row's columns).

        A reset that fails (the worker hung or crashed, and is replaced; the env refused the
        row's options) does not raise: TRL calls ``reset`` outside its tool-error handling, so
        an error here ended the whole training step. The failure is logged and counted as any
        episode's, each tool call then raises it (the model is shown it) and
        :meth:`get_reward` gives the failure reward.

        Returns:
            The reset observation's text when :attr:`show_reset_observation` (the failure's,
            when it failed), else None.

        Raises:
            KeyError: A column named in ``option_columns`` or ``seed_column`` is missing.
        """
        out = self._episode.reset(self._task.options(row), self._task.seed(row))
        self._pool._count_episodes(1)
        if out.failure is not None:
            return f"\n\n{_failure_error(out)}" if self.show_reset_observation else None
        if not self.show_reset_observation:
            return None
        # TRL appends this to the prompt's last message without a separator.
        return "\n\n" + self._reset_text_fn(out.observations[0])

    def get_reward(self) -> Optional[float]:
        """The episode's reward: the env's (per the pool's ``reward_mode``) or the failure reward."""
        return self._episode.finish(truncated=True).reward

    def _act(self, action: Any) -> str:
        """Step the episode with ``action``; the observation's text, for the model."""
        out = self._episode.outcome
        if out.done:
            if out.failure is not None:
                raise _failure_error(out)
            return "The episode is over: nothing was run."
        why = self._check_action(action) if self._check_action is not None else None
        if why is not None:
            # A malformed call (an int for `command`, code past the size cap) is the model's
            # slip, as a missing argument is (TypeError): it may call again. Sent, the env
            # would refuse it and end the whole rollout at the failure reward.
            raise InvalidActionError(f"{why}; nothing was run and the episode goes on: "
                                     "call the tool again with valid arguments")
        out = self._episode.step(action)
        if out.failure is not None:
            raise _failure_error(out)
        text = self._observation_fn(out.observations[-1])
        if out.terminated:
            text += "[the episode is over]\n"
        return text


class CodingTools(EnvTools):
    """``OpenEnv/Coding-v0`` as a tool: ``run_python(code)``.

    In task mode (``EnvPool("coding", task="humaneval")`` with ``option_columns=("problem",)``)
    the code runs after the task's prompt against its tests, and each call scores the
    fraction of tests passed (the pool's default ``reward_mode`` for Coding is ``"final"``: the last
    call scores the rollout); free-form, a call scores 1
    when the code exits cleanly.

    Example:
        >>> with EnvPool("coding", num_workers=1, provider="process") as pool:
        ...     tools = tool_env_factory(pool)()
        ...     tools.reset(prompt="Print 42.")
        ...     tools.run_python("print(6 * 7)").splitlines()[0], tools.get_reward()
        ('42', 1.0)
    """

    def run_python(self, code: str) -> str:
        """Run Python code in a fresh, isolated Python process and return what it printed.

        In a task, the code continues the task's prompt (write the function body, or the
        whole function) and is checked against the task's tests.

        Args:
            code: The Python source to run.

        Returns:
            The process's stdout and stderr, its exit code and, in a task, how many tests passed.
        """
        return self._act({"code": code})


class GitTools(EnvTools):
    """``OpenEnv/Git-v0`` as a tool: ``shell(command)``; ``reset`` returns the task's instruction.

    Each call scores the task's checks that pass (the last call scores the rollout: the
    pool's default ``reward_mode`` for Git is ``"final"``); the
    episode ends when all of them pass.

    Example:
        >>> with EnvPool("git", num_workers=1, provider="process", task="create-branch") as pool:
        ...     tools = tool_env_factory(pool)()
        ...     print(tools.reset(prompt="").strip().splitlines()[0])
        ...     tools.shell("git switch -c feature/login").splitlines()[-1], tools.get_reward()
        Create a branch named `feature/login` from `main` and switch to it.
        ('[the episode is over]', 1.0)
    """

    show_reset_observation = True

    def shell(self, command: str) -> str:
        """Run a shell command (git and the usual tools) in the task's repository.

        Commands run without a terminal: stdin is empty and no editor opens, so give
        messages on the command line (`git commit -m ...`, `git merge --no-edit`).

        Args:
            command: The bash command line to run, e.g. `git status`.

        Returns:
            The command's output and exit code, and how many of the task's checks pass.
        """
        return self._act({"command": command})


#: The tool env class of each catalog env that has one.
TOOL_ENVS: dict[str, type[EnvTools]] = {"coding": CodingTools, "git": GitTools}


def tool_env_factory(pool: EnvPool, **kwargs: Any) -> Callable[[], EnvTools]:
    """The ``environment_factory`` for TRL's GRPOTrainer over ``pool``.

    Args:
        pool: An :class:`EnvPool` of an env with tools (Coding, Git).
        **kwargs: Passed to the tool env (``option_columns``, ``seed_column``, ...; see
            :class:`EnvTools`).

    Returns:
        A callable making one tool env (one session on ``pool``) per call.

    Raises:
        InvalidRequestError: The pool's env has no tool env (a ``ValueError``).

    Example:
        >>> pool = EnvPool("git", num_workers=1, provider="process", task="create-branch")  # doctest: +SKIP
        >>> trainer = GRPOTrainer(model, args=config, train_dataset=prompts,             # doctest: +SKIP
        ...                       environment_factory=tool_env_factory(pool))
    """
    cls = TOOL_ENVS.get(pool.info.name)
    if cls is None:
        raise InvalidRequestError(f"env {pool.info.name!r} has no tool env; these do: {sorted(TOOL_ENVS)} "
                                  "(or subclass EnvTools with your own tool methods)")
    return lambda: cls(pool, **kwargs)


def _failure_error(out: Any) -> OpenEnvError:
    cls = _FAILURES.get(out.failure, OpenEnvError)
    return cls(f"the environment failed ({out.failure}): {out.message}; this episode is over "
               f"and scores {out.reward!r}")
