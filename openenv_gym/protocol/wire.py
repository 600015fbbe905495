"""The binary wire format: length-prefixed msgpack frames with numpy arrays as raw bytes.

A frame is a 4-byte little-endian unsigned length followed by that many bytes of msgpack.
Requests are maps with an ``op`` key; replies are ``{"ok": True, ...}`` or
``{"ok": False, "error": {"type", "message"}}``. A numpy array travels as msgpack
extension type 1: a small header (dtype string and shape, itself msgpack) and the array's
raw bytes — never a list of numbers, and nothing is ever unpickled. An integer beyond
msgpack's 64 bits (an unseeded env's ``np_random_seed``) travels as extension type 2, its
decimal digits.

Example:
    >>> import numpy as np
    >>> frame = encode({"obs": np.arange(3, dtype=np.uint8)})
    >>> decode(frame[HEADER.size:])["obs"]
    array([0, 1, 2], dtype=uint8)
"""

from __future__ import annotations

import struct
import threading
from typing import Any

import msgpack
import numpy as np

from openenv_gym.errors import InvalidRequestError, ProtocolError

__all__ = ["HEADER", "MAX_FRAME", "PROTOCOL_VERSION", "encode", "decode", "frame_length",
           "wire_problem"]

#: Version of the request/reply vocabulary (the ops and their fields) that a worker's
#: ``spec`` reply announces as ``"protocol"``; raise it when a change breaks older peers.
PROTOCOL_VERSION = 1

#: Frame header: payload length, little-endian uint32.
HEADER = struct.Struct("<I")
#: Default largest frame either side accepts (64 MiB): bigger ones are refused, not read.
MAX_FRAME = 64 * 1024 * 1024

_NDARRAY = 1
_BIGINT = 2
_ARRAY_HEAD = struct.Struct("<H")


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            return obj.tolist()
        arr = obj if obj.flags.c_contiguous else np.ascontiguousarray(obj)
        head = msgpack.packb((arr.dtype.str, obj.shape))
        # One copy of the array's memory (join reads it through the buffer protocol).
        data = arr.reshape(-1).view(np.uint8) if arr.size else b""
        return msgpack.ExtType(_NDARRAY, b"".join((_ARRAY_HEAD.pack(len(head)), head, data)))
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    if isinstance(obj, int):  # msgpack hands over only the ints it cannot fit in 64 bits
        return msgpack.ExtType(_BIGINT, str(obj).encode())
    raise TypeError(f"cannot send {type(obj).__name__} over the wire; use numbers, str, bytes, "
                    "lists, dicts or numpy arrays")


_SENDABLE = (str, bytes, bytearray, bool, int, float, type(None), np.generic)


def wire_problem(value: Any, where: str = "value", _depth: int = 0) -> str | None:
    """The first part of ``value`` that :func:`encode` cannot carry, named by its path; None
    when every part can. Only walked for values an env hands over (an info), so a bad one is
    named (``info['obj'] of type object``) instead of failing the whole reply unnamed.

    Example:
        >>> wire_problem({"t": 1, "s": {1, 2}, "a": np.zeros(2)}, "info") is None
        True
        >>> wire_problem({"t": [1, object()]}, "info")
        "info['t'][1] of type object"
    """
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: msgpack's str is UTF-8
            return f"{where}, text that is not valid UTF-8 ({value[exc.start:exc.end]!r} at {exc.start}),"
        return None
    if isinstance(value, _SENDABLE):
        return None
    if _depth > 64:
        return f"{where}, nested more than 64 levels deep (a cycle?),"
    if isinstance(value, np.ndarray):
        if not value.dtype.hasobject:
            return None
        value = value.tolist()
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, _SENDABLE):
                return f"{where} with a key of type {type(key).__qualname__}"
            problem = wire_problem(item, f"{where}[{key!r}]", _depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            problem = wire_problem(item, f"{where}[{i}]", _depth + 1)
            if problem:
                return problem
        return None
    return f"{where} of type {type(value).__qualname__}"


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _BIGINT:
        try:
            return int(data.decode("ascii"))
        except ValueError:
            raise ProtocolError(f"malformed big integer {bytes(data[:40])!r}") from None
    if code != _NDARRAY:
        raise ProtocolError(f"unknown msgpack extension type {code}")
    (head_len,) = _ARRAY_HEAD.unpack_from(data)
    dtype_str, shape = msgpack.unpackb(data[2 : 2 + head_len])
    dtype = np.dtype(dtype_str)
    if dtype.hasobject:
        raise ProtocolError("object arrays are not accepted on the wire")
    # frombuffer views the frame's bytes: no copy until the caller writes into its own buffer.
    return np.frombuffer(data, dtype=dtype, offset=2 + head_len).reshape(shape)


_local = threading.local()


def _packer() -> msgpack.Packer:
    # One Packer per thread, reused: msgpack.packb builds a new one per call, which costs
    # ~15 µs more per message that carries an array (measured here). Packer is not thread-safe.
    packer = getattr(_local, "packer", None)
    if packer is None:
        packer = _local.packer = msgpack.Packer(default=_default, use_bin_type=True)
    return packer


def encode(message: Any) -> bytes:
    """Encode a message as one complete frame (header included).

    Args:
        message: A map of msgpack-able values and numpy arrays.

    Returns:
        The frame's bytes.

    Raises:
        InvalidRequestError: A string is not valid UTF-8 (a lone surrogate).
        TypeError: A value of a type the wire does not carry.
    """
    try:
        payload = _packer().pack(message)
    except UnicodeEncodeError as exc:  # a lone surrogate ("\udcff"): msgpack's str is UTF-8
        bad = exc.object[exc.start:exc.end]
        raise InvalidRequestError(f"cannot send text that is not valid UTF-8: {bad!r} at position "
                                  f"{exc.start} of a string ({exc.reason}); remove it, or encode "
                                  "the text with errors='replace' first") from None
    except TypeError as exc:  # name the part that failed; only walked on this failure
        problem = wire_problem(message, "message")
        if problem is None:
            raise
        raise TypeError(f"cannot send {problem} over the wire; use numbers, str, bytes, lists, "
                        "dicts or numpy arrays") from exc
    return HEADER.pack(len(payload)) + payload


def decode(payload: bytes | bytearray | memoryview) -> Any:
    """Decode a frame's payload (without its header).

    Args:
        payload: The msgpack bytes.

    Returns:
        The message, with arrays as read-only numpy views of ``payload``.

    Raises:
        ProtocolError: The bytes are not a valid message.
    """
    try:
        return msgpack.unpackb(payload, ext_hook=_ext_hook, raw=False, strict_map_key=False)
    except ProtocolError:
        raise
    except Exception as exc:  # msgpack raises several unrelated types for garbage input
        raise ProtocolError(f"undecodable frame ({type(exc).__name__}: {exc})") from None


def frame_length(header: bytes, max_frame: int = MAX_FRAME) -> int:
    """Read a frame header and check the announced length.

    Args:
        header: The 4 header bytes.
        max_frame: The largest accepted payload.

    Returns:
        The payload length.

    Raises:
        ProtocolError: The frame is larger than ``max_frame``.
    """
    (length,) = HEADER.unpack(header)
    if length > max_frame:
        raise ProtocolError(f"frame of {length} bytes exceeds the {max_frame}-byte limit")
    return length
