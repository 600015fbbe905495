"""Train LLM agents with TRL's GRPO on openenv_gym environments.

Importing this module (not ``import openenv_gym``) is what needs the ``trl`` extra
(``pip install 'openenv-gym[trl]'``); the pool and reward function themselves only need
the core package, the rollout and tiny-model helpers need ``transformers``.

* :class:`EnvPool` — a pool of workers that runs many sandboxed episodes at once.
* :class:`EnvReward` — single turn: ``GRPOTrainer(reward_funcs=[EnvReward(pool)])``
  executes every completion in the env and returns its reward.
* :class:`EnvRollout` + :func:`episode_reward` — multi-turn:
  ``GRPOTrainer(rollout_func=EnvRollout(pool), reward_funcs=[episode_reward])``.
* :func:`tool_env_factory` — agentic: ``GRPOTrainer(environment_factory=tool_env_factory(pool))``;
  TRL runs the tool loop, the model calls ``run_python`` (Coding) or ``shell`` (Git) on a
  sandboxed session, and the env's reward scores the rollout.
* Failed episodes (timeout, crash, env error) get a configurable reward
  (:class:`FailurePolicy`) and a logged reason on the ``openenv_gym.trl`` logger.

Example:
    >>> from openenv_gym.trl import EnvPool, EnvReward                        # doctest: +SKIP
    >>> pool = EnvPool("coding", num_workers=8, task="humaneval")             # doctest: +SKIP
    >>> trainer = GRPOTrainer(model, reward_funcs=[EnvReward(pool, option_columns=("problem",))],
    ...                       args=config, train_dataset=humaneval_dataset())  # doctest: +SKIP
"""

from __future__ import annotations

from openenv_gym.trl.datasets import humaneval_dataset
from openenv_gym.trl.formats import completion_text, default_action_fn, default_observation_fn, extract_code
from openenv_gym.trl.outcome import FAILURE_KINDS, EpisodeOutcome, FailurePolicy
from openenv_gym.trl.pool import EnvPool, Episode, EpisodeJob
from openenv_gym.trl.rewards import EnvReward
from openenv_gym.trl.rollout import REWARD_FIELD, EnvRollout, episode_reward, prompt_seed
from openenv_gym.trl.tools import CodingTools, EnvTools, GitTools, tool_env_factory

__all__ = [
    "FAILURE_KINDS",
    "REWARD_FIELD",
    "CodingTools",
    "EnvPool",
    "EnvReward",
    "EnvRollout",
    "EnvTools",
    "Episode",
    "EpisodeJob",
    "EpisodeOutcome",
    "FailurePolicy",
    "GitTools",
    "completion_text",
    "default_action_fn",
    "default_observation_fn",
    "episode_reward",
    "extract_code",
    "humaneval_dataset",
    "prompt_seed",
    "tool_env_factory",
]
