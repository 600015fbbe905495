"""from_wire never changes an action's value to make it fit (Gymnasium's contains() would
refuse it locally), keeps numpy scalars, and Sequence / OneOf / Graph have a wire form."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.envs.gym.env import GymEnv
from openenv_gym.errors import InvalidActionError
from openenv_gym.protocol.wire import HEADER, decode, encode
from openenv_gym.spaces import from_wire, space_from_dict, space_to_dict

MD = spaces.MultiDiscrete([3, 2], start=[-1, 5], dtype=np.int32)
MB = spaces.MultiBinary([2, 3])
BOX = spaces.Box(-1, 1, (2, 2), np.float32)
BOOL = spaces.Box(0, 1, (2, 2), np.bool_)

REFUSED = [
    (MD, np.array([-0.5, 5.9])),                      # truncated to [0, 5] before
    (MD, np.array([2**32 - 1, 5], np.int64)),          # wrapped to [-1, 5] in int32 before
    (spaces.MultiDiscrete([[3, 4], [5, 6]]), [[1.5, 0], [2, 0]]),
    (MB, np.array([[0.5, 0, 0], [0, 1, 0.9]])),        # 0.5 -> 0 before
    (MB, np.array([[256, 0, 0], [0, 1, 257]])),        # int8 wrap: 256 -> 0 before
    (BOX, [0.1, 0.2, 0.3, 0.4]),                       # reshaped to (2, 2) before
    (BOOL, np.array([True, False, True, False])),      # reshaped to (2, 2) before
    (spaces.Box(-5, 5, (2,), np.int8), np.array([0.5, 1.0])),  # 0.5 -> 0 before
]


@pytest.mark.parametrize("space, value", REFUSED, ids=lambda x: repr(x)[:30])
def test_from_wire_leaves_a_value_that_does_not_fit_as_it_is(space, value) -> None:
    assert not space.contains(value)                   # locally refused
    assert not space.contains(from_wire(value, space))  # and so after from_wire


@pytest.mark.parametrize("space, value", [
    (MD, [0, 6]), (MD, np.array([1, 5], np.int64)), (MB, np.ones((2, 3), np.float32)),
    (BOX, [[0.1, 0.2], [0.3, 0.4]]), (BOOL, [[True, False], [0, 1]]),
    (spaces.Box(0, 300, (2,), np.uint16), np.array([299, 0], np.int64)),
])
def test_from_wire_still_casts_a_value_that_fits(space, value) -> None:
    out = from_wire(value, space)
    assert isinstance(out, np.ndarray) and out.dtype == space.dtype and space.contains(out)


def test_a_numpy_scalar_of_a_shapeless_box_stays_a_numpy_scalar() -> None:
    space = spaces.Box(-5, 5, (), np.int8)
    out = from_wire(np.int8(3), space)
    assert type(out) is np.int8 and out == 3


class _MultiDiscreteAction(gym.Env):
    observation_space = spaces.Discrete(2)
    action_space = MD

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return 0, 0.0, False, False, {}


def test_a_served_env_refuses_a_float_multidiscrete_action() -> None:
    gym.register("OpenEnvTest/MDAction-v0", entry_point=_MultiDiscreteAction)
    try:
        env = GymEnv("OpenEnvTest/MDAction-v0")
        with pytest.raises(InvalidActionError):
            env.parse_action(np.array([-0.5, 5.9]))
        assert env.parse_action(np.array([-1, 6])).tolist() == [-1, 6]
    finally:
        del gym.registry["OpenEnvTest/MDAction-v0"]


EXOTIC = [
    spaces.Sequence(spaces.Box(0, 1, (2,), np.float32)),
    spaces.Sequence(spaces.Box(0, 1, (2,), np.float32), stack=True),
    spaces.Sequence(spaces.Discrete(3)),
    spaces.OneOf((spaces.Discrete(3), spaces.Box(-1, 1, (2,), np.float32))),
    spaces.Graph(spaces.Box(-1, 1, (3,), np.float32), spaces.Discrete(4)),
    spaces.Graph(spaces.Discrete(5), None),
    spaces.Dict({"a": spaces.Tuple((spaces.Sequence(spaces.Discrete(2)),
                                    spaces.Graph(spaces.Discrete(2), spaces.Box(0, 1, (1,)))))}),
]


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and np.array_equal(a, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("space", EXOTIC, ids=repr)
def test_sequence_oneof_graph_round_trip(space) -> None:
    rebuilt = space_from_dict(space_to_dict(space))
    assert rebuilt == space
    space.seed(0)
    for _ in range(5):
        sample = space.sample()
        back = from_wire(decode(encode(sample)[HEADER.size:]), rebuilt)
        assert rebuilt.contains(back) and _same(sample, back)
