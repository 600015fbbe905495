"""``EnvReward``: a TRL reward function that scores a batch of completions in our envs.

GRPOTrainer generates completions as usual and calls its reward functions with the whole
batch. ``EnvReward`` turns each completion into an action, runs one episode per
completion on an :class:`~openenv_gym.trl.pool.EnvPool` (all of them concurrently) and
returns the env's reward unchanged — e.g. the fraction of HumanEval asserts that passed in
``OpenEnv/Coding-v0``. Dataset columns named in ``option_columns`` choose each episode's
task (``reset(options={"problem": row["problem"]})``). A pool whose env draws a task at
each reset (``task="humaneval"``, Git's ``task="suite"``) takes the task from the row's
``problem`` (Git: ``task``) column by default: the completion never saw the task a reset
would draw, so it is graded against its own prompt's (a batch without the column raises).

Example:
    >>> pool = EnvPool("echo", num_workers=2, provider="process")
    >>> reward = EnvReward(pool)
    >>> [round(r, 1) for r in reward(prompts=["p", "p"], completions=["ab", "abcd"])]
    [0.2, 0.4]
    >>> pool.close()
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from openenv_gym.trl.datasets import OptionsFn, row_task
from openenv_gym.trl.formats import ActionFn, completion_text, default_action_fn
from openenv_gym.trl.outcome import EpisodeOutcome
from openenv_gym.trl.pool import EnvPool, EpisodeJob

__all__ = ["EnvReward", "OptionsFn"]


class EnvReward:
    """Reward function for ``GRPOTrainer(reward_funcs=[EnvReward(pool)])``: one episode per completion.

    Args:
        pool: The workers that execute the completions.
        action_fn: ``text -> action`` (default: :func:`~openenv_gym.trl.formats.default_action_fn`).
        option_columns: Dataset columns passed as ``reset`` options (``("problem",)``).
            Default: none, but the column of the task's option (``"problem"``, Git's
            ``"task"``) when the pool's env draws a task at each reset, which a
            single-turn completion never sees.
        options_fn: ``row -> options`` instead of ``option_columns``.
        seed_column: Dataset column holding ``reset``'s seed; without it the seed comes
            from the prompt (:func:`~openenv_gym.trl.rollout.prompt_seed`), as in
            :class:`~openenv_gym.trl.rollout.EnvRollout` and
            :class:`~openenv_gym.trl.tools.EnvTools`: every completion of a GRPO group
            gets the same reset.
        name: Name TRL logs the reward under (default ``"openenv_<env>"``).

    Attributes:
        last_outcomes: The :class:`~openenv_gym.trl.outcome.EpisodeOutcome` of each
            completion of the last call (for logging and inspection).

    Example:
        >>> with EnvPool("echo", num_workers=1, provider="process") as pool:
        ...     reward = EnvReward(pool)
        ...     [round(r, 1) for r in reward(prompts=["p"], completions=["abc"])]
        [0.3]
    """

    def __init__(self, pool: EnvPool, *, action_fn: Optional[ActionFn] = None,
                 option_columns: Sequence[str] = (), options_fn: Optional[OptionsFn] = None,
                 seed_column: Optional[str] = None, name: Optional[str] = None) -> None:
        # Single turn: the model never sees the reset observation, nor a task drawn there.
        self.task = row_task(pool, option_columns, options_fn, seed_column, task_shown=False,
                             adapter="EnvReward")
        self.pool = pool
        self.action_fn = action_fn or default_action_fn(pool.info.name, pool.action_space)
        # TRL reads __name__ for its logs ("rewards/<name>/mean").
        self.__name__ = name or f"openenv_{pool.info.name}"
        self.last_outcomes: list[EpisodeOutcome] = []

    def jobs(self, completions: Sequence[Any], prompts: Optional[Sequence[Any]] = None,
             **columns: Any) -> list[EpisodeJob]:
        """The episode each completion becomes (what :meth:`__call__` runs).

        Raises:
            KeyError: A column the options or seed come from is missing from the batch.
        """
        jobs = []
        for i, completion in enumerate(completions):
            row = {k: v[i] for k, v in columns.items() if isinstance(v, (list, tuple)) and len(v) == len(completions)}
            if prompts is not None:
                row["prompt"] = prompts[i]
            action = self.action_fn(completion_text(completion))
            jobs.append(EpisodeJob([action], options=self.task.options(row), seed=self.task.seed(row), tag=i))
        return jobs

    def __call__(self, prompts: Optional[Sequence[Any]] = None, completions: Sequence[Any] = (),
                 **kwargs: Any) -> list[Optional[float]]:
        """Score ``completions`` (TRL passes prompts, completions and the dataset columns).

        Returns:
            One reward per completion: the env's, or the pool's failure reward.
        """
        columns = {k: v for k, v in kwargs.items() if k not in ("trainer_state", "completion_ids")}
        self.last_outcomes = self.pool.run(self.jobs(completions, prompts, **columns))
        return [o.reward for o in self.last_outcomes]
