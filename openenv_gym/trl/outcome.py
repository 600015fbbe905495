"""What one episode run through the adapter produced, and the rule for failed episodes.

An episode either ends normally (its reward is the env's, untouched) or fails: the
adapter's wall-clock budget ran out (``"timeout"``), the worker died or lost the session
(``"crash"``), or the env refused a request (``"env_error"``, e.g. an action that does not
fit). A failed episode gets the *failure reward* instead of raising, so one bad sandbox
never kills a training step.

Example:
    >>> policy = FailurePolicy(failure_reward={"timeout": -1.0}, default=0.0)
    >>> policy.reward_for("timeout"), policy.reward_for("crash")
    (-1.0, 0.0)
    >>> FailurePolicy(failure_reward=None).reward_for("crash") is None
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

from openenv_gym._numbers import is_finite
from openenv_gym.errors import InvalidRequestError

__all__ = ["EpisodeOutcome", "FailurePolicy", "FAILURE_KINDS", "FailureReward", "REWARD_MODES"]

#: Why an episode can fail, in the order they are checked.
FAILURE_KINDS = ("timeout", "crash", "env_error")

#: How the rewards of a multi-step episode become one number: the sum of the step rewards
#: (``"return"``, the Gymnasium return) or the last step's reward (``"final"``, for envs
#: whose reward is a state score such as "fraction of checks passing now").
REWARD_MODES = ("return", "final")

#: One reward for every failure, ``None`` (TRL then leaves the completion out of its group
#: baseline and gives it zero advantage), or a per-kind mapping.
FailureReward = Union[float, None, Mapping[str, Optional[float]]]


@dataclass(frozen=True)
class FailurePolicy:
    """The reward a failed episode gets.

    Args:
        failure_reward: A float for every failure kind, ``None``, or a mapping
            ``{"timeout": -1.0, "crash": None, ...}``; kinds left out use ``default``.
        default: Reward of kinds a mapping leaves out.

    Example:
        >>> policy = FailurePolicy({"timeout": -1.0, "crash": None})
        >>> policy.reward_for("timeout"), policy.reward_for("crash"), policy.reward_for("env_error")
        (-1.0, None, 0.0)
    """

    failure_reward: FailureReward = 0.0
    default: Optional[float] = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.failure_reward, Mapping):
            unknown = set(self.failure_reward) - set(FAILURE_KINDS)
            if unknown:
                raise InvalidRequestError(f"failure_reward has unknown kinds {sorted(unknown)}; "
                                          f"known: {list(FAILURE_KINDS)}")
            values = {f"failure_reward[{k!r}]": v for k, v in self.failure_reward.items()}
        else:
            values = {"failure_reward": self.failure_reward}
        for name, value in {**values, "default": self.default}.items():
            # Checked now: reward_for runs at the first failure, maybe hours into training,
            # where a bad value would raise out of the batch instead of scoring it.
            if value is not None and not is_finite(value):
                raise InvalidRequestError(f"{name} must be a finite number or None, got {value!r}")

    def reward_for(self, kind: str) -> Optional[float]:
        """The reward of an episode that failed with ``kind``."""
        if isinstance(self.failure_reward, Mapping):
            value = self.failure_reward.get(kind, self.default)
        else:
            value = self.failure_reward
        return None if value is None else float(value)


@dataclass
class EpisodeOutcome:
    """One episode as the adapter saw it.

    Attributes:
        reward: The reward handed to GRPO: the env's (see ``reward_mode``) or, on
            failure, the failure reward (may be ``None``).
        rewards: The env's reward of each step that completed.
        actions: The actions sent, in order (the last may have failed).
        observations: The observation after reset, then after each completed step.
        infos: ``info`` of reset, then of each completed step.
        terminated: The env ended the episode.
        truncated: The env (or the adapter's turn limit) cut it short.
        failure: ``None``, or one of :data:`FAILURE_KINDS`.
        message: Why it failed (empty when it did not).
        worker: Index of the worker that ran it.

    Example:
        >>> outcome = EpisodeOutcome(rewards=[0.5, 1.0])
        >>> outcome.env_reward("return"), outcome.env_reward("final")
        (1.5, 1.0)
    """

    reward: Optional[float] = None
    rewards: list[float] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    observations: list[Any] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    failure: Optional[str] = None
    message: str = ""
    worker: int = -1

    @property
    def ok(self) -> bool:
        """Whether the episode ran without failing."""
        return self.failure is None

    @property
    def done(self) -> bool:
        """Whether the episode is over (ended by the env, or failed)."""
        return self.terminated or self.truncated or self.failure is not None

    def env_reward(self, mode: str) -> float:
        """The env's own reward of the steps so far, combined by ``mode``."""
        if mode == "final":
            return float(self.rewards[-1]) if self.rewards else 0.0
        return float(sum(self.rewards))
