"""What encodes decodes: a value the peer could not decode (a frozenset as a map key, nesting
deeper than msgpack unpacks) is refused at encode by a TypeError naming where it is, as any
other value the wire does not carry; a hostile deep frame is a ProtocolError."""

from __future__ import annotations

import threading

import msgpack
import numpy as np
import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.wire import HEADER, decode, encode


def _round_trip(value):
    return decode(encode(value)[HEADER.size:])


def _nested(leaf, depth: int, wrap=lambda v: [v]):
    for _ in range(depth):
        leaf = wrap(leaf)
    return leaf


@pytest.mark.parametrize("info, where, what", [
    ({frozenset({1, 2}): "a"}, r"message\['info'\]", "a frozenset"),
    ({"ok": 1, frozenset(): "a"}, r"message\['info'\]", "a frozenset"),
    ({(1, frozenset({2})): "a"}, r"message\['info'\]", "a tuple holding a frozenset"),
    ({"by_set": [{}, {frozenset({"x"}): 1}]}, r"message\['info'\]\['by_set'\]\[1\]", "a frozenset"),
    ({"a": np.array([{frozenset({1}): 2}], dtype=object)}, r"message\['info'\]\['a'\]\[0\]", "a frozenset"),
    ({"t": ({(frozenset({1}),): 2},)}, r"message\['info'\]\['t'\]\[0\]", "a tuple holding a frozenset"),
])
def test_a_frozenset_map_key_is_refused_at_encode_naming_where(info, where, what) -> None:
    # It encoded (as a list) and the peer's whole frame failed: "unhashable type: 'list'".
    with pytest.raises(TypeError, match=rf"cannot send {where} with a key .* \({what}\) over the wire.*tuple"):
        encode({"ok": True, "info": info})
    assert _round_trip({"ok": True}) == {"ok": True}  # the next message is not refused


def test_frozensets_as_values_and_tuples_as_keys_still_cross() -> None:
    value = {"s": frozenset({1}), "e": frozenset(), "k": {(1, (2, "x")): "a", (): 0},
             "n": [{"inner": frozenset({3})}]}
    assert _round_trip(value) == {"s": [1], "e": [], "k": {(1, (2, "x")): "a", (): 0},
                                  "n": [{"inner": [3]}]}


@pytest.mark.parametrize("wrap", [lambda v: [v], lambda v: (v,), lambda v: {"k": v}], ids=["list", "tuple", "dict"])
def test_too_deep_is_a_type_error_naming_where_and_the_limit(wrap) -> None:
    # It was msgpack's bare ValueError("recursion limit exceeded."), nothing named.
    with pytest.raises(TypeError, match=r"cannot send message\['info'\]\[.*\]\.\.\.\[.*\] over the wire: "
                                        r"it is nested more than \d+ levels deep"):
        encode({"info": _nested(1, 5000, wrap)})


def test_a_value_that_contains_itself_is_a_type_error() -> None:
    loop: list = []
    loop.append(loop)
    with pytest.raises(TypeError, match=r"message\['info'\]\['x'\]\[0\]\[0\].*nested more than \d+ levels.*contains itself"):
        encode({"info": {"x": loop}})


@pytest.mark.parametrize("leaf", [0, (), "x", np.zeros(2), {"k": 1}, [1]], ids=repr)
def test_what_encodes_near_the_depth_limit_decodes(leaf) -> None:
    # The encoder refuses, by name, the first level msgpack does not pack; below it all decodes.
    # (An empty list or dict exactly on msgpack 1.1's last level still packs and does not
    # unpack: refusing it would cost every message a wrapping array, ~0.1 µs.)
    low, high = 1, 1 << 14  # the least depth refused, whatever msgpack's limit
    while high - low > 1:
        mid = (low + high) // 2
        try:
            encode({"i": _nested(leaf, mid)})
            low = mid
        except (TypeError, ValueError):
            high = mid
    with pytest.raises(TypeError, match="nested more than"):
        encode({"i": _nested(leaf, high)})
    for depth in range(high - 4, high):
        assert decode(encode({"i": _nested(leaf, depth)})[HEADER.size:])["i"] is not None


@pytest.mark.parametrize("unit", [b"\x91", b"\x81\xa1k", b"\x92\xc7\x00\x04"], ids=["list", "dict", "tuple"])
def test_a_hostile_deep_frame_is_a_protocol_error(unit: bytes) -> None:
    with pytest.raises(ProtocolError, match="nested deeper"):
        decode(unit * 100_000 + b"\x01")


def test_tuples_decode_the_same_in_several_threads_and_after_a_bad_frame() -> None:
    # The decoder's count of open tuple marks is its own call's, not a thread's.
    value = {"v": [(i, (float(i), "x"), ()) for i in range(2000)], "k": {(1, 2): [(3,)]}}
    frame = encode(value)[HEADER.size:]
    with pytest.raises(ProtocolError, match="malformed tuple"):
        decode(msgpack.packb({"x": [1, msgpack.ExtType(4, b"")]}))
    assert decode(frame) == value
    results: list = []
    threads = [threading.Thread(target=lambda: results.extend(decode(frame) == value for _ in range(20)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 80
