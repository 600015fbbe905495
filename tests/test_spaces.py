"""Spaces survive the trip through /spec, and models map to spaces in one place."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from pydantic import Field

from openenv_gym.models import Action, model_space
from openenv_gym.spaces import UnicodeText, from_wire, space_from_dict, space_to_dict

SPACES = [
    spaces.Box(0, 255, (210, 160, 3), np.uint8),
    spaces.Box(np.array([-1.0, -np.inf]), np.array([1.0, np.inf]), dtype=np.float32),
    spaces.Discrete(5, start=-2),
    spaces.MultiDiscrete([3, 4]),
    spaces.MultiBinary(6),
    spaces.Text(10, min_length=2, charset="abc"),
    UnicodeText(100),
    spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Tuple([spaces.Box(-1, 1, (2,)), UnicodeText(5)])}),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: type(s).__name__)
def test_space_round_trip(space: spaces.Space) -> None:
    rebuilt = space_from_dict(space_to_dict(space))
    assert rebuilt == space
    sample = space.sample()
    assert rebuilt.contains(from_wire(_as_wire(sample), rebuilt))


def _as_wire(value):  # what msgpack gives back: lists for tuples, ints for numpy ints
    if isinstance(value, tuple):
        return [_as_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_wire(v) for k, v in value.items()}
    if isinstance(value, np.integer):
        return int(value)
    return value


def test_unicode_text_holds_any_text() -> None:
    space = UnicodeText(20)
    assert space.contains("tab\tnew\nline ünï ✓ 🙂")
    assert not space.contains("x" * 21) and not space.contains(3)


def test_model_space_maps_field_types_and_bounds() -> None:
    class A(Action):
        code: str = Field(max_length=100)
        timeout: float = Field(2.0, ge=0, le=30)
        retries: int = Field(0, ge=0, le=3)
        verbose: bool = False

    space = model_space(A)
    assert space["code"] == UnicodeText(100)
    assert space["timeout"] == spaces.Box(0, 30, (), np.float64)
    assert space["retries"] == spaces.Box(0, 3, (), np.int64)
    assert space["verbose"] == spaces.Discrete(2)


def test_model_space_rejects_unmapped_types() -> None:
    class B(Action):
        items: list[int]

    with pytest.raises(TypeError, match="B.items"):
        model_space(B)


def test_dict_space_keeps_the_served_key_order() -> None:
    # A Dict built from pairs keeps its order (gymnasium sorts only a mapping's keys); that
    # order decides seeded sampling and flattening, so the client's copy must keep it.
    served = spaces.Dict([("vel", spaces.Box(-1, 1, (2,), np.float32)), ("pos", spaces.Discrete(3)),
                          ("inner", spaces.Dict([("z", spaces.Discrete(2)), ("a", spaces.Discrete(5))]))])
    rebuilt = space_from_dict(space_to_dict(served))
    assert list(rebuilt.spaces) == ["vel", "pos", "inner"]
    assert list(rebuilt["inner"].spaces) == ["z", "a"]
    served.seed(7)
    rebuilt.seed(7)
    for _ in range(3):
        a, b = served.sample(), rebuilt.sample()
        np.testing.assert_array_equal(spaces.flatten(served, a), spaces.flatten(rebuilt, b))
