"""Small Gym envs the vector, client, server and SB3 tests serve, each built around the one
action space or behaviour a test needs, all registered on import. A worker imports this module
by the env id :func:`served` gives (``"tests.vector.toy_envs:OpenEnvTest/Hang-v0"``), a test
makes the local twin by the plain id (``gym.make(HANG_ID)``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def served(env_id: str) -> str:
    """The ``env_id`` that makes a worker import this module and serve ``env_id`` from it."""
    return f"{__name__}:{env_id}"


class _Zeros(gym.Env):
    """Resets to an all-zero observation and a step count of 0 (``self.t``)."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(self.observation_space.shape, self.observation_space.dtype), {}


class ScalarBox(_Zeros):
    """A Box action of shape (); observation and reward: the action as a Python float (so
    float32 rounding shows)."""

    observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float64)
    action_space = spaces.Box(-10, 10, (), np.float32)

    def step(self, action):
        value = float(action)
        return np.array([value]), value, False, False, {}


#: How many numbers BigBox's action holds: a float64 row of it is 40 MB as sent.
SIZE = 5_000_000


class BigBox(_Zeros):
    """A Box action of :data:`SIZE` numbers; reward: the action's first number; observation:
    the step count."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float32)
    action_space = spaces.Box(-1, 1, (SIZE,), np.float32)

    def step(self, action):
        self.t += 1
        return np.full(1, self.t, np.float32), float(action[0]), False, False, {}


#: ActionType's action spaces, by its ``space`` argument.
SPACES = {"discrete": spaces.Discrete(3, start=-1), "multidiscrete": spaces.MultiDiscrete([3, 2]),
          "box": spaces.Box(-1, 1, (2,), np.float32)}


class ActionType(_Zeros):
    """Info ``"type"``: the type name and dtype of the action ``step`` got; reward ``action.sum()``
    (a numpy method: an env may call one on its action, as it may under Gymnasium's vector envs)."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)

    def __init__(self, space: str = "discrete") -> None:
        self.action_space = SPACES[space]

    def step(self, action):
        kind = f"{type(action).__name__} {getattr(action, 'dtype', None)}"
        return np.zeros(1, np.float32), float(action.sum()), False, False, {"type": kind}


class DictAct(_Zeros):
    """A Dict action holding Text (no pydantic model: its worker checks actions with
    ``action_space.contains``); reward: the text's length plus the choice; truncates after 3
    steps."""

    observation_space = spaces.Box(0, 100, (1,), np.float32)
    action_space = spaces.Dict({"word": spaces.Text(4, min_length=1, charset="abc"),
                                "choice": spaces.Discrete(3)})

    def step(self, action):
        self.t += 1
        return (np.full(1, self.t, np.float32), float(len(action["word"]) + action["choice"]),
                False, self.t >= 3, {})


class Int32Act(_Zeros):
    """A MultiDiscrete action of int32; reward: its sum; refuses an action outside its space,
    as an env checker would."""

    observation_space = spaces.Box(-1, 1, (2,), np.float32)
    action_space = spaces.MultiDiscrete([3, 3], dtype=np.int32)

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        return np.zeros(2, np.float32), float(np.sum(action)), False, False, {}


class MultiBinaryAct(gym.Env):
    """A MultiBinary action; reward: how many bits it sets; random observations from the env's
    seed; truncates after 5 steps; refuses an action outside its space, as an env checker would."""

    observation_space = spaces.Box(-1, 1, (2,), np.float32)
    action_space = spaces.MultiBinary(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"{action!r} is not in {self.action_space}")
        self.t += 1
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return obs, float(np.sum(action)), False, self.t >= 5, {}


class Hang(_Zeros):
    """Action 0 steps at once; action 1 hangs the step for good (busy in Python, so its worker
    outlasts the SIGTERM grace)."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def step(self, action):
        while action == 1:
            pass
        return np.zeros(1, np.float32), 0.0, False, False, {}


class ResetRaise(_Zeros):
    """Reset with ``seed=13`` raises ``ValueError`` (the episode running goes on); episodes run
    until a time limit ends them; the observation counts the episode's steps."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float64)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        if seed == 13:
            raise ValueError("reset refused for seed 13")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.t += 1
        return np.array([float(self.t)]), 1.0, False, False, {}


class AutoresetRaise(ResetRaise):
    """Episodes end after two steps; the second reset raises ``ValueError`` (later ones work),
    so an autoreset is the reset that raises."""

    def __init__(self) -> None:
        self.resets = 0

    def reset(self, *, seed=None, options=None):
        self.resets += 1
        if self.resets == 2:
            raise ValueError("second reset refused")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, _, truncated, info = super().step(action)
        return obs, reward, self.t >= 2, truncated, info


SCALAR_BOX_ID = "OpenEnvTest/ScalarBox-v0"
BIG_BOX_ID = "OpenEnvTest/BigBox-v0"
ACTION_TYPE_ID = "OpenEnvTest/ActionType-v0"
DICT_ACT_ID = "OpenEnvTest/DictAct-v0"
INT32_ACT_ID = "OpenEnvTest/Int32Act-v0"
MULTIBINARY_ID = "OpenEnvTest/MultiBinaryAct-v0"
HANG_ID = "OpenEnvTest/Hang-v0"
RESET_RAISE_ID = "OpenEnvTest/ResetRaise-v0"
AUTORESET_RAISE_ID = "OpenEnvTest/AutoresetRaise-v0"

for _env_id, _entry_point in (
        (SCALAR_BOX_ID, ScalarBox), (BIG_BOX_ID, BigBox), (ACTION_TYPE_ID, ActionType),
        (DICT_ACT_ID, DictAct), (INT32_ACT_ID, Int32Act), (MULTIBINARY_ID, MultiBinaryAct),
        (HANG_ID, Hang), (RESET_RAISE_ID, ResetRaise), (AUTORESET_RAISE_ID, AutoresetRaise)):
    if _env_id not in gym.registry:
        gym.register(_env_id, entry_point=_entry_point)
