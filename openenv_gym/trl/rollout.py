"""``EnvRollout``: a multi-turn ``rollout_func`` for TRL's GRPOTrainer, over an :class:`EnvPool`.

Each prompt of the batch becomes one episode on its own session. Turn by turn, the
trainer's own generation path (transformers ``generate`` or vLLM, whatever the
``GRPOConfig`` chose) writes the next action for every live episode in one batch, the pool
steps all of them concurrently, and each observation is appended to that episode's token
stream with ``env_mask = 0`` (so the loss only trains on the model's tokens). Episodes end
when the env says so, after ``max_turns``, when the completion reaches
``max_completion_length``, or when they fail (failure reward, logged reason).

The episode's reward travels to GRPO in the ``openenv_reward`` field; pass
:func:`episode_reward` (or ``rollout.reward_func``) as the reward function.

Example:
    >>> pool = EnvPool("coding", num_workers=4, persistent=True)            # doctest: +SKIP
    >>> rollout = EnvRollout(pool, max_turns=3)                              # doctest: +SKIP
    >>> trainer = GRPOTrainer(model, reward_funcs=[episode_reward], rollout_func=rollout,
    ...                       args=config, train_dataset=ds, processing_class=tokenizer)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Optional, Sequence

from openenv_gym._numbers import is_int
from openenv_gym.errors import InvalidRequestError
from openenv_gym.trl.datasets import drawn_task
from openenv_gym.trl.formats import (
    ActionFn,
    ObservationFn,
    default_action_fn,
    default_observation_fn,
)
from openenv_gym.trl.outcome import EpisodeOutcome
from openenv_gym.trl.pool import EnvPool

__all__ = ["EnvRollout", "episode_reward", "prompt_seed", "REWARD_FIELD"]

#: The rollout output field carrying each episode's reward to the reward functions.
REWARD_FIELD = "openenv_reward"


def prompt_seed(prompt: Any) -> int:
    """A stable seed from the prompt's text, so every completion of a GRPO group sees the same task.

    Args:
        prompt: A prompt as TRL passes it (text or a conversation).

    Returns:
        A 32-bit seed that depends only on the prompt.

    Example:
        >>> prompt_seed("Write add(a, b).") == prompt_seed("Write add(a, b).") != prompt_seed("Other.")
        True
    """
    return int.from_bytes(hashlib.sha256(repr(prompt).encode()).digest()[:4], "little")


def episode_reward(prompts: Any = None, completions: Any = None, openenv_reward: Any = None,
                   **kwargs: Any) -> list[Optional[float]]:
    """Reward function returning the episode rewards an :class:`EnvRollout` produced, unchanged.

    Args:
        prompts: TRL's prompts (unused).
        completions: TRL's completions (unused).
        openenv_reward: The rewards column :class:`EnvRollout` adds to the rollout.
        **kwargs: Other columns TRL passes (unused).

    Returns:
        One reward per completion (``None`` for a failed episode whose policy says so).

    Raises:
        KeyError: There is no ``openenv_reward`` column: the rollout was not an :class:`EnvRollout`.

    Example:
        >>> episode_reward(completions=["a", "b"], openenv_reward=[1.0, None])
        [1.0, None]
    """
    if openenv_reward is None:
        raise KeyError("no 'openenv_reward' field: use episode_reward with rollout_func=EnvRollout(...)")
    return list(openenv_reward)


class EnvRollout:
    """``GRPOTrainer(rollout_func=EnvRollout(pool))``: multi-turn episodes, stepped concurrently.

    Args:
        pool: The workers hosting the episodes.
        max_turns: Model turns per episode at most (the episode is then truncated and
            keeps the env's reward so far).
        action_fn: ``text -> action`` for each model turn.
        observation_fn: ``observation -> text`` fed back after each env step.
        options_fn: ``prompt -> reset options`` (choose the task from the prompt).
        seed_fn: ``prompt -> reset seed``; default :func:`prompt_seed` (same prompt, same task).
        show_reset_observation: Append the reset observation's text to the prompt (for
            envs that pose the task at reset, like Git's instruction): to the last
            message of a conversational prompt, before the chat template is applied.

    Raises:
        InvalidRequestError: ``max_turns`` is not a positive int; or the pool's env draws a
            task at each reset (Coding's ``task="humaneval"``, Git's ``task="suite"``) and
            neither ``show_reset_observation`` nor ``options_fn`` is given, so the model
            would be graded against a task it never saw.

    With a conversational prompt (a list of messages) each observation goes back to the
    model as a user turn of the chat template, followed by the template's generation
    prompt; with a text prompt it is appended as it is.

    Attributes:
        last_outcomes: The episodes of the last call.

    Example:
        >>> with EnvPool("coding", num_workers=1, provider="process", persistent=True) as pool:
        ...     rollout = EnvRollout(pool, max_turns=3)
        ...     rollout.reward_func is episode_reward
        True
        >>> trainer = GRPOTrainer(model, reward_funcs=[episode_reward], rollout_func=rollout,
        ...                       args=config, train_dataset=ds)   # doctest: +SKIP
    """

    def __init__(self, pool: EnvPool, *, max_turns: int = 4, action_fn: Optional[ActionFn] = None,
                 observation_fn: Optional[ObservationFn] = None,
                 options_fn: Optional[Callable[[Any], Optional[dict[str, Any]]]] = None,
                 seed_fn: Optional[Callable[[Any], Optional[int]]] = prompt_seed,
                 show_reset_observation: bool = False) -> None:
        # is_int, as EnvPool's counts: numpy's ints count (np.int64(4) was refused as "must be a
        # positive int, got 4"), a bool does not (True ran one turn).
        if not is_int(max_turns, 1):
            raise InvalidRequestError(f"max_turns must be a positive int, got {max_turns!r}")
        drawn = drawn_task(pool.info, pool.env_kwargs)
        if drawn is not None and options_fn is None and not show_reset_observation:
            # A rollout gets only the prompts (no dataset columns): the reset would draw a task
            # from the prompt's seed that the model never sees, and grade its answers against
            # that one -- HumanEval/2's prompt scored by another problem's asserts, silently.
            raise InvalidRequestError(
                f"the pool's env draws a task at each reset ({drawn[1]}) and EnvRollout would not "
                "show it to the model, so its answers would be graded against a task its prompt "
                "did not pose: pass show_reset_observation=True (the model is shown the drawn "
                f"task), options_fn=prompt -> {{{drawn[0]!r}: ...}} (the prompt's own task), or "
                "make the pool with a fixed task")
        self.pool = pool
        self.max_turns = int(max_turns)
        self.action_fn = action_fn or default_action_fn(pool.info.name, pool.action_space)
        self.observation_fn = observation_fn or default_observation_fn(pool.info.name)
        self.reset_text_fn = observation_fn or default_observation_fn(pool.info.name, task=True)
        self.options_fn = options_fn
        self.seed_fn = seed_fn
        self.show_reset_observation = show_reset_observation
        self.reward_func = episode_reward
        self.last_outcomes: list[EpisodeOutcome] = []

    # TRL reads a callable's __name__ in some log paths.
    __name__ = "openenv_rollout"

    def __call__(self, prompts: Sequence[Any], trainer: Any) -> dict[str, Any]:
        """Run one episode per prompt; returns TRL's rollout dict plus ``openenv_reward``.

        Raises:
            RuntimeError: The trainer has no ``_generate_single_turn`` (a TRL outside the
                supported range), before any episode is opened.
        """
        generate = getattr(trainer, "_generate_single_turn", None)
        if not callable(generate):
            # TRL has no public per-turn generation call yet: name the way out up front
            # instead of failing mid-rollout with an AttributeError.
            raise RuntimeError(
                f"EnvRollout generates each turn with GRPOTrainer._generate_single_turn, which "
                f"this trainer ({type(trainer).__name__}, trl {_trl_version()}) does not have; "
                "install a supported TRL (pip install 'trl>=1.16,<2') or use tool_env_factory(pool) "
                "with GRPOTrainer(environment_factory=...), TRL's own agent loop")
        tokenizer = getattr(trainer, "_tokenizer", None) or trainer.processing_class
        budget = int(trainer.max_completion_length)
        chat = [not isinstance(p, str) for p in prompts]
        episodes = self.pool.open(len(prompts))
        try:
            options = [self.options_fn(p) if self.options_fn else None for p in prompts]
            seeds = [self.seed_fn(p) if self.seed_fn else None for p in prompts]
            outcomes = self.pool.reset_many(episodes, options, seeds)
            prompt_ids = [
                _encode_prompt(tokenizer, p, self.reset_text_fn(out.observations[0])
                               if self.show_reset_observation and out.ok and out.observations else None)
                for p, out in zip(prompts, outcomes)]
            completion_ids: list[list[int]] = [[] for _ in prompts]
            env_mask: list[list[int]] = [[] for _ in prompts]
            live = [i for i, out in enumerate(outcomes) if not out.done]
            for _turn in range(self.max_turns):
                if not live:
                    break
                inputs = [prompt_ids[i] + completion_ids[i] for i in live]
                generated, _ = generate(inputs, None, {}, 1)
                actions = []
                for i, ids in zip(live, generated):
                    ids = list(ids)[: budget - len(completion_ids[i])]
                    completion_ids[i] += ids
                    env_mask[i] += [1] * len(ids)
                    actions.append(self.action_fn(tokenizer.decode(ids, skip_special_tokens=True)))
                stepped = self.pool.step_many([episodes[i] for i in live], actions)
                still = []
                last_turn = _turn == self.max_turns - 1
                for i, out in zip(live, stepped):
                    outcomes[i] = out
                    if out.done or last_turn or len(completion_ids[i]) >= budget:
                        continue  # no model turn follows: the observation would only cost tokens
                    text = self.observation_fn(out.observations[-1])
                    feedback = _chat_turn(tokenizer, text) if chat[i] else _encode(tokenizer, text)
                    feedback = feedback[: budget - len(completion_ids[i])]
                    completion_ids[i] += feedback
                    env_mask[i] += [0] * len(feedback)
                    if len(completion_ids[i]) < budget:
                        still.append(i)
                live = still
            for i, ep in enumerate(episodes):
                outcomes[i] = ep.finish(truncated=True) if not outcomes[i].done else outcomes[i]
        finally:
            self.pool.close_many(episodes)
        for i in range(len(prompts)):
            if not completion_ids[i]:  # failed at reset: TRL needs at least one token
                completion_ids[i], env_mask[i] = [tokenizer.eos_token_id], [0]
        self.last_outcomes = outcomes
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None,
                "env_mask": env_mask, REWARD_FIELD: [o.reward for o in outcomes]}


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _encode_prompt(tokenizer: Any, prompt: Any, task_text: Optional[str] = None) -> list[int]:
    if isinstance(prompt, str):
        ids = list(tokenizer(prompt)["input_ids"])
        return ids + _encode(tokenizer, task_text) if task_text else ids
    if task_text:
        # Into the user's message, as TRL's own agent loop does: after the generation prompt
        # it would read as the model's own words.
        last = prompt[-1]
        content = last.get("content")
        if isinstance(content, str):
            content = content + "\n\n" + task_text.rstrip("\n")
        else:  # typed content blocks
            content = list(content or []) + [{"type": "text", "text": task_text}]
        prompt = list(prompt[:-1]) + [{**last, "content": content}]
    return _template(tokenizer, prompt, True)


def _template(tokenizer: Any, messages: list[Any], add_generation_prompt: bool) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return list(ids)


def _chat_turn(tokenizer: Any, text: str) -> list[int]:
    """``text`` as the chat template's next user turn, then its generation prompt: the
    tokens that follow the model's own end of turn (its EOS)."""
    messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": _TURN_END},
                {"role": "user", "content": text.rstrip("\n")}]
    rendered = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if not isinstance(rendered, str) or rendered.count(_TURN_END) != 1:
        return _encode(tokenizer, text)  # a template that drops or repeats assistant text
    suffix = rendered.split(_TURN_END, 1)[1]
    eos = getattr(tokenizer, "eos_token", None)
    if eos and suffix.startswith(eos):
        suffix = suffix[len(eos):]  # the model wrote its end of turn itself
    return _encode(tokenizer, suffix)


#: Marks where the assistant's text ends in a rendered conversation (a private-use character).
_TURN_END = "\ue000openenv-turn-end\ue000"


def _trl_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trl")
    except PackageNotFoundError:  # importable but not installed as a distribution
        return "unknown version"
