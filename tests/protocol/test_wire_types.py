"""Values keep their Python/numpy types across the wire, as a local env hands them over."""

from __future__ import annotations

import collections
import enum
import json
import math

import msgpack
import numpy as np
import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.wire import HEADER, decode, encode
from openenv_gym.spaces import to_jsonable


def _round_trip(value):
    return decode(encode({"v": value})[HEADER.size:])["v"]


@pytest.mark.parametrize("value", [
    np.float16(1.5), np.float32(0.1), np.float64(0.25), np.longdouble(0.1), np.int8(-3),
    np.int32(7), np.int64(-(2**63)), np.uint8(200), np.uint64(2**64 - 1), np.bool_(True),
    np.bool_(False), np.complex64(1 + 2j), np.str_("héllo"), np.bytes_(b"\x00\xff"),
    np.datetime64("2020-01-02"), np.float32("nan"), np.float64("-inf"),
], ids=repr)
def test_numpy_scalars_keep_their_type(value) -> None:
    # np.float64 is a float to msgpack, the others were .item()-ed: all came back as Python's.
    back = _round_trip(value)
    assert type(back) is type(value)
    assert back == value or (math.isnan(back) and math.isnan(value))


def test_a_0d_array_stays_an_array_and_a_scalar_a_scalar() -> None:
    back = decode(encode({"a": np.array(1.5, np.float32), "s": np.float32(1.5)})[HEADER.size:])
    assert isinstance(back["a"], np.ndarray) and back["a"].shape == () and back["a"].dtype == np.float32
    assert type(back["s"]) is np.float32


def test_tuples_stay_tuples_and_lists_lists() -> None:
    value = {"pos": (1, 2), "nested": [(np.int64(1), (2.0, "x")), [3]], "arr": (np.zeros(2, np.uint8),),
             "empty": (), "keys": {1: (2,)}}
    back = _round_trip(value)
    assert back["pos"] == (1, 2) and type(back["pos"]) is tuple
    assert type(back["nested"]) is list and type(back["nested"][0]) is tuple
    assert type(back["nested"][0][0]) is np.int64 and back["nested"][0][1] == (2.0, "x")
    assert type(back["nested"][1]) is list and back["empty"] == () and back["keys"] == {1: (2,)}
    assert back["arr"][0].dtype == np.uint8
    assert {back["pos"]} == {(1, 2)}  # hashable, as locally


def test_plain_values_unchanged() -> None:
    value = {"f": 1.5, "i": 2, "b": True, "n": None, "s": "x", "by": b"\x01", "big": 2**70,
             "neg": -(2**70), "u64": 2**64 - 1, "nan": float("nan"), "inf": float("inf"), 3: "int key"}
    back = _round_trip(value)
    for key in ("f", "i", "b", "n", "s", "by", "big", "neg", "u64", "inf", 3):
        assert back[key] == value[key] and type(back[key]) is type(value[key]), key
    assert math.isnan(back["nan"])


def test_subclasses_of_plain_types_cross_as_their_base() -> None:
    class Color(enum.IntEnum):
        RED = 1

    class Name(str):
        pass

    back = _round_trip({"e": Color.RED, "od": collections.OrderedDict(a=1), "s": Name("x"),
                        "dd": collections.defaultdict(int, b=2)})
    assert back == {"e": 1, "od": {"a": 1}, "s": "x", "dd": {"b": 2}}
    assert type(back["e"]) is int and type(back["od"]) is dict and type(back["s"]) is str


def test_deeply_nested_tuples_are_refused_not_a_crash() -> None:
    data = msgpack.packb(1)
    for _ in range(5000):  # each level would be a nested unpackb on the C stack
        data = msgpack.packb(msgpack.ExtType(4, msgpack.packb([msgpack.ExtType(4, data)])))
    with pytest.raises(ProtocolError):
        decode(data)
    deep: object = 1
    for _ in range(100):  # as deep as lists may nest: a tuple is an array in the same stream
        deep = (deep,)
    assert _round_trip(deep) == deep
    for _ in range(5000):
        deep = (deep,)
    with pytest.raises(TypeError, match="nested more than"):  # msgpack's limit, as for lists
        encode({"info": deep})


@pytest.mark.parametrize("payload", [
    msgpack.ExtType(3, b""), msgpack.ExtType(3, b"\x03<f4\x00"), msgpack.ExtType(3, b"\x03|O8" + bytes(8)),
    msgpack.ExtType(3, b"\x09zzzzzzzzz"), msgpack.ExtType(4, msgpack.packb({"a": 1})), msgpack.ExtType(4, b"\xc1"),
])
def test_malformed_scalars_and_tuples_are_protocol_errors(payload) -> None:
    with pytest.raises(ProtocolError):
        decode(msgpack.packb(payload))


def test_the_same_values_stay_valid_json_for_the_http_api() -> None:
    info = {"x": np.float32(0.5), "b": np.bool_(True), "pos": (1, 2), "nan": np.float64("nan"),
            "a": np.arange(2, dtype=np.int16), "by": np.bytes_(b"\xff"), 3: np.uint64(2**64 - 1)}
    text = json.dumps(to_jsonable(_round_trip(info)), allow_nan=False)
    assert json.loads(text) == {"x": 0.5, "b": True, "pos": [1, 2], "nan": None, "a": [0, 1],
                                "by": "/w==", "3": 2**64 - 1}
