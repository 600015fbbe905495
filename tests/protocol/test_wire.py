"""The wire format: arrays as raw bytes, no pickle, garbage rejected with ProtocolError."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.wire import HEADER, decode, encode, frame_length


@pytest.mark.parametrize("dtype", ["uint8", "int64", "float32", "float64", "bool"])
def test_arrays_round_trip_bit_exact(dtype: str) -> None:
    arr = (np.random.default_rng(0).random((210, 160, 3)) * 200).astype(dtype)
    msg = decode(encode({"obs": arr, "nested": [arr[:2, :2]]})[HEADER.size:])
    np.testing.assert_array_equal(msg["obs"], arr)
    assert msg["obs"].dtype == arr.dtype and msg["obs"].shape == arr.shape
    np.testing.assert_array_equal(msg["nested"][0], arr[:2, :2])


def test_image_travels_as_raw_bytes_not_a_list() -> None:
    frame = np.zeros((210, 160, 3), np.uint8)
    assert len(encode({"obs": frame})) < frame.nbytes + 64


def test_non_contiguous_and_scalars() -> None:
    arr = np.arange(12).reshape(3, 4)[:, ::2]
    out = decode(encode({"a": arr, "s": np.float32(1.5), "i": np.int64(3)})[HEADER.size:])
    np.testing.assert_array_equal(out["a"], arr)
    assert out["s"] == 1.5 and out["i"] == 3


@pytest.mark.parametrize("payload", [b"\xc1", b"\x85\xa2op", msgpack.packb(msgpack.ExtType(9, b"x")),
                                     msgpack.packb(msgpack.ExtType(1, b"\x00"))])
def test_garbage_is_a_protocol_error(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(payload)


def test_object_arrays_are_refused_on_decode() -> None:
    head = msgpack.packb(("|O", (1,)))
    ext = msgpack.ExtType(1, len(head).to_bytes(2, "little") + head + b"\x00" * 8)
    with pytest.raises(ProtocolError, match="object arrays"):
        decode(msgpack.packb(ext))


def test_oversized_frame_header_is_refused() -> None:
    with pytest.raises(ProtocolError, match="exceeds"):
        frame_length(HEADER.pack(1 << 31), max_frame=1 << 20)
    assert frame_length(HEADER.pack(10)) == 10


def test_unencodable_values_name_the_type_and_where_it_is() -> None:
    with pytest.raises(TypeError, match=r"cannot send message\['x'\] of type object over the wire"):
        encode({"x": object()})
    with pytest.raises(TypeError, match=r"cannot send message\['info'\]\['deep'\]\[1\] of type range"):
        encode({"ok": True, "info": {"fine": [1, 2.0, "a"], "deep": [0, range(3)]}})


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 3**100, -(2**130)])
def test_integers_beyond_64_bits_cross_whole(value: int) -> None:
    # An unseeded env's np_random_seed is a 128-bit int (VectorEnv.get_attr reads it).
    assert decode(encode({"x": value, "small": 2**63 - 1})[HEADER.size:]) == {"x": value, "small": 2**63 - 1}


def test_a_malformed_big_integer_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="big integer"):
        decode(msgpack.packb(msgpack.ExtType(2, b"12x")))


def test_text_that_is_not_utf8_is_a_typed_error_and_the_next_message_encodes() -> None:
    from openenv_gym.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match=r"not valid UTF-8: '\\udcff' at position 4"):
        encode({"code": "x = 1\udcff"[:4] + "\udcff"})
    assert decode(encode({"code": "x = 1"})[HEADER.size:]) == {"code": "x = 1"}


def test_zero_dim_and_empty_arrays_keep_their_shape() -> None:
    out = decode(encode({"a": np.array(5, np.int64), "e": np.zeros((0, 3), np.float32)})[HEADER.size:])
    assert out["a"].shape == () and out["a"] == 5
    assert out["e"].shape == (0, 3) and out["e"].dtype == np.float32
