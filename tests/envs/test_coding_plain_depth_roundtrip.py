"""Whatever pack_plain sends, unpack_plain takes: the depth limits of both ends agree."""

from __future__ import annotations

import msgpack
import pytest

from openenv_gym.envs.coding.runner import _TUPLE, MAX_DEPTH, NotPlain, pack_plain, unpack_plain


def _nest(n: int, inner: object) -> object:
    for _ in range(n):
        inner = (inner,)
    return inner


@pytest.mark.parametrize("value", [
    _nest(MAX_DEPTH + 1, 1),                 # tuples at depths 0..MAX_DEPTH, as pack_plain takes
    _nest(MAX_DEPTH, 1j),                    # a complex inside the deepest tuple
    _nest(MAX_DEPTH, frozenset({1})),
])
def test_what_is_packed_unpacks(value: object) -> None:
    assert unpack_plain(pack_plain(value)) == value


def test_deeper_is_refused_at_both_ends() -> None:
    with pytest.raises(NotPlain, match="nested more than"):
        pack_plain(_nest(MAX_DEPTH + 2, 1))
    frame = msgpack.ExtType(_TUPLE, msgpack.packb([1]))
    for _ in range(MAX_DEPTH + 1):  # hand-made, as a child could write it on its status pipe
        frame = msgpack.ExtType(_TUPLE, msgpack.packb([frame]))
    with pytest.raises(NotPlain, match="nested more than"):
        unpack_plain(msgpack.packb(frame))
