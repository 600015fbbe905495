"""The binary wire format: length-prefixed msgpack frames with numpy arrays as raw bytes.

A frame is a 4-byte little-endian unsigned length followed by that many bytes of msgpack.
Requests are maps with an ``op`` key; replies are ``{"ok": True, ...}`` or
``{"ok": False, "error": {"type", "message"}}``. A numpy array travels as msgpack
extension type 1: a small header (dtype string and shape, itself msgpack) and the array's
raw bytes — never a list of numbers, and nothing is ever unpickled. An integer beyond
msgpack's 64 bits (an unseeded env's ``np_random_seed``) travels as extension type 2, its
decimal digits. Types come back as they were sent, as a local env hands them over: a numpy
scalar (``np.float32(0.5)``, ``np.bool_(True)``; even ``np.float64``, which msgpack would
take for a float) travels as extension type 3, an array's header and bytes that decode to
the scalar, and a tuple as an array whose first item is an empty extension type 4 (msgpack
has one sequence type, which decodes as a list): the items stay in the same msgpack stream,
not packed again inside an extension, so nesting costs neither a copy per level nor a
nested unpacking on the C stack.

Example:
    >>> import numpy as np
    >>> frame = encode({"obs": np.arange(3, dtype=np.uint8)})
    >>> decode(frame[HEADER.size:])["obs"]
    array([0, 1, 2], dtype=uint8)
    >>> decode(encode({"x": np.float32(0.5), "pos": (1, 2)})[HEADER.size:])
    {'x': np.float32(0.5), 'pos': (1, 2)}
"""

from __future__ import annotations

import functools
import itertools
import reprlib
import struct
import threading
from typing import Any

import msgpack
import numpy as np

from openenv_gym.errors import InvalidRequestError, ProtocolError

__all__ = ["HEADER", "MAX_FRAME", "PROTOCOL_VERSION", "encode", "decode", "frame_length",
           "oversized", "wire_problem"]

#: Version of the request/reply vocabulary (the ops and their fields) that a worker's
#: ``spec`` reply announces as ``"protocol"``; raise it when a change breaks older peers.
PROTOCOL_VERSION = 2

#: Frame header: payload length, little-endian uint32.
HEADER = struct.Struct("<I")
#: Default largest frame either side accepts (64 MiB): bigger ones are refused, not read.
MAX_FRAME = 64 * 1024 * 1024

_NDARRAY = 1
_BIGINT = 2
_NPSCALAR = 3
_TUPLE = 4
_ARRAY_HEAD = struct.Struct("<H")
_INT64 = (-(2**63), 2**64 - 1)
#: Numpy scalars' ext payload heads (length byte + dtype string) by scalar type, and back.
#: Only types whose dtype the type fixes are kept (np.float32, np.int64, ...: a bounded set);
#: str_, bytes_ and datetime64/timedelta64 scalars have one dtype per length or unit, chosen by
#: whoever made them (a peer), and every datetime64 dtype hashes alike whatever its unit.
_SCALAR_HEADS: dict[type, bytes] = {}
_SCALAR_DTYPES: dict[bytes, np.dtype] = {}
#: A tuple's array starts with this (an ext 4 of no data); the decoder turns it into a tuple.
_TUPLE_MARK = msgpack.ExtType(_TUPLE, b"")
#: What the decoder's ext hook answers for :data:`_TUPLE_MARK`, until its list hook takes it.
_MARK = object()


def _array_ext(code: int, obj: np.ndarray) -> msgpack.ExtType:
    arr = obj if obj.flags.c_contiguous else np.ascontiguousarray(obj)
    head = msgpack.packb((arr.dtype.str, obj.shape))
    # One copy of the array's memory (join reads it through the buffer protocol).
    data = arr.reshape(-1).view(np.uint8) if arr.size else b""
    return msgpack.ExtType(code, b"".join((_ARRAY_HEAD.pack(len(head)), head, data)))


def _default(obj: Any) -> Any:
    # The packer checks exact types (strict_types): here come numpy objects, tuples, subclasses
    # of the built-in types (np.float64 is a float, an IntEnum an int) and ints beyond 64 bits.
    if type(obj) is tuple:  # first: a tuple-heavy payload calls here once per tuple
        return [_TUPLE_MARK, *obj]
    if isinstance(obj, np.generic):
        head = _SCALAR_HEADS.get(type(obj))
        if head is None:
            dtype = obj.dtype
            if dtype.hasobject or dtype.kind == "V":  # no stable bytes: as before
                item = obj.item()  # a structured scalar's is a tuple, which the packer takes here no more
                return [_TUPLE_MARK, *item] if isinstance(item, tuple) else item
            # An empty np.str_ / np.bytes_ says dtype <U0 / |S0 (itemsize 0) but its bytes are
            # one character's: name the dtype its bytes have (<U1 / |S1), which decodes to it.
            if not dtype.itemsize:
                dtype = np.array(obj).dtype
            code = dtype.str.encode("ascii")
            head = bytes((len(code),)) + code
            if dtype.kind not in "USMm":  # the type fixes the dtype: one entry per type
                _SCALAR_HEADS[type(obj)] = head
        return msgpack.ExtType(_NPSCALAR, head + obj.tobytes())
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            return obj.tolist()
        return _array_ext(_NDARRAY, obj)
    if isinstance(obj, tuple):
        return [_TUPLE_MARK, *obj]
    if isinstance(obj, (dict, list, set, frozenset)):
        if type(obj).__hash__ is not None:
            # A frozenset (or a hashable subclass of list, dict or set) may be a map key, or
            # inside a tuple that is one: it arrives as a list or a dict, which cannot be a key,
            # and the whole frame would fail to decode. encode() looks for one in the keys.
            _local.key_check = True
        if isinstance(obj, dict):  # OrderedDict, defaultdict, ...: a dict, as before
            return dict(obj.items())
        return list(obj)
    if isinstance(obj, int):
        value = int.__index__(obj)  # the int itself, not what a subclass's __int__ answers
        if type(obj) is not int and _INT64[0] <= value <= _INT64[1]:
            return value  # an IntEnum: the int, as before
        # msgpack hands over the ints it cannot fit in 64 bits
        return msgpack.ExtType(_BIGINT, str(value).encode())
    if isinstance(obj, float):
        return float.__float__(obj)
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj)
    raise TypeError(f"cannot send {type(obj).__name__} over the wire; use numbers, str, bytes, "
                    "lists, dicts or numpy arrays")


_SENDABLE = (str, bytes, bytearray, bool, int, float, type(None), np.generic)


def wire_problem(value: Any, where: str = "value") -> str | None:
    """The first part of ``value`` that :func:`encode` cannot carry, named by its path; None
    when every part can. Only walked for values an env hands over (an info), so a bad one is
    named (``info['obj'] of type object``) instead of failing the whole reply unnamed.

    Example:
        >>> wire_problem({"t": 1, "s": {1, 2}, "a": np.zeros(2), (0, 1): 2}, "info") is None
        True
        >>> wire_problem({"t": [1, object()]}, "info")
        "info['t'][1] of type object"
    """
    found: list[str] = []

    def stop(depth: int, item: Any) -> bool:
        if isinstance(item, str) and not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:  # a lone surrogate: msgpack's str is UTF-8
                found.append(f", text that is not valid UTF-8 ({item[exc.start:exc.end]!r} at {exc.start}),")
                return True
            return False
        if isinstance(item, (*_SENDABLE, np.ndarray, list, tuple, set, frozenset)):
            return False  # an object array's, a container's items: walked as its children
        if isinstance(item, dict):
            for key in item:
                if isinstance(key, tuple):  # travels; its items are walked as children
                    part = _unhashable_part(key)  # but would arrive as a list: no key
                    if part is not None:
                        found.append(f" with a key {_short_repr(key)} holding a {part.__qualname__}")
                        return True
                elif not isinstance(key, _SENDABLE):
                    found.append(f" with a key of type {type(key).__qualname__}")
                    return True
            return False
        found.append(f" of type {type(item).__qualname__}")
        return True

    def stop_within_limit(depth: int, item: Any) -> bool:
        if depth > _MAX_CHECKED_DEPTH:
            found.append(f", nested more than {_MAX_CHECKED_DEPTH} levels deep (a cycle?),")
            return True
        return stop(depth, item)

    path = _walk(value, where, stop_within_limit)
    return None if path is None else path + found[0]


#: How deep :func:`wire_problem` looks into an env's info (a deeper one is most likely a cycle).
_MAX_CHECKED_DEPTH = 64


def _ext_hook(code: int, data: bytes) -> Any:
    # Every extension but a tuple's mark, which the unpacker's own hook answers (counting it).
    if code == _TUPLE:  # a mark with data: tuples are never packed inside an extension
        raise ProtocolError("malformed tuple")
    if code == _BIGINT:
        try:
            return int(data.decode("ascii"))
        except ValueError:
            raise ProtocolError(f"malformed big integer {bytes(data[:40])!r}") from None
    if code == _NPSCALAR:
        return _scalar(data)
    if code != _NDARRAY:
        raise ProtocolError(f"unknown msgpack extension type {code}")
    (head_len,) = _ARRAY_HEAD.unpack_from(data)
    dtype_str, shape = msgpack.unpackb(data[2 : 2 + head_len])
    dtype = np.dtype(dtype_str)
    if dtype.hasobject:
        raise ProtocolError("object arrays are not accepted on the wire")
    # frombuffer views the frame's bytes: no copy until the caller writes into its own buffer.
    return np.frombuffer(data, dtype=dtype, offset=2 + head_len).reshape(shape)


def _scalar(data: bytes) -> np.generic:
    # A numpy scalar: one byte of length, the dtype string, the value's bytes.
    end = 1 + data[0] if data else 0
    dtype = _SCALAR_DTYPES.get(data[1:end])
    if dtype is None:
        try:
            dtype = np.dtype(data[1:end].decode("ascii"))
        except (TypeError, ValueError, UnicodeDecodeError):
            raise ProtocolError(f"malformed numpy scalar {bytes(data[:40])!r}") from None
        if dtype.hasobject or dtype.kind == "V" or len(data) - end != dtype.itemsize:
            raise ProtocolError(f"malformed numpy scalar {bytes(data[:40])!r}")
        if len(_SCALAR_DTYPES) < 256:  # a peer's odd strings (``<U7``, ``<U8``, ...) do not grow it unbounded
            _SCALAR_DTYPES[data[1:end]] = dtype
    elif len(data) - end != dtype.itemsize:
        raise ProtocolError(f"malformed numpy scalar {bytes(data[:40])!r}")
    return np.frombuffer(data, dtype, 1, end)[0]  # the scalar (a copy)


_local = threading.local()


def _packer() -> msgpack.Packer:
    # One Packer per thread, reused: msgpack.packb builds a new one per call, which costs
    # ~15 µs more per message that carries an array (measured here). Packer is not thread-safe.
    # strict_types: a subclass of a built-in type (np.float64, an IntEnum) and a tuple go to
    # _default, which keeps what a float or a list would lose (its numpy type, tupleness).
    packer = getattr(_local, "packer", None)
    if packer is None:
        packer = _local.packer = msgpack.Packer(default=_default, use_bin_type=True, strict_types=True)
        _local.key_check = False
    return packer


@functools.cache
def _nest_limit() -> int:
    """How many containers deep msgpack's packer nests a value (its C packer: 511 in msgpack
    1.0, 1024 in 1.1); asked of msgpack once, on the first message nested deeper."""
    packer, depth = msgpack.Packer(), 256
    while depth < 1 << 20:  # double until refused, then bisect: a dozen packs
        try:
            packer.pack(_nested_list(depth * 2))
        except ValueError:
            break
        depth *= 2
    low, high = depth, depth * 2  # packs low, refuses high
    while high - low > 1:
        mid = (low + high) // 2
        try:
            packer.pack(_nested_list(mid))
            low = mid
        except ValueError:
            high = mid
    return low


def _nested_list(depth: int) -> list[Any]:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _children(value: Any) -> Any:
    """(path step, item) for each item the packer packs one level inside ``value``, None for a
    value packed whole. A step is an index or a dict key, or :data:`_KEY` for a dict key (a
    tuple) itself."""
    if isinstance(value, np.ndarray):
        value = value.tolist() if value.dtype.hasobject else None
    elif isinstance(value, np.generic) and (value.dtype.hasobject or value.dtype.kind == "V"):
        value = value.item()  # what _default packs for it
    if isinstance(value, dict):  # its values, then its tuple keys (packed a level down too)
        keys = ((_KEY, key) for key in value if isinstance(key, tuple))
        return itertools.chain(value.items(), keys)
    if isinstance(value, (list, tuple, set, frozenset)):
        if not value and isinstance(value, tuple):  # its array holds the tuple mark, a level down
            return iter(((_MARK, None),))
        return enumerate(value)
    return None


#: A path step into a dict's key (as opposed to the value under it).
_KEY = object()


def _step(step: Any, item: Any) -> str:
    if step is _KEY:
        return f"<key {_short_repr(item)}>"
    return "" if step is _MARK else f"[{_short_repr(step)}]"


def _short_repr(value: Any) -> str:
    return reprlib.repr(value)  # bounded in length and depth


def _walk(message: Any, where: str, stop: Any) -> str | None:
    """Depth first, without recursion (a message may nest deeper than Python's recursion limit):
    the path of the first value ``stop(depth, value)`` is true for (the message is at depth 0),
    or None."""
    if stop(0, message):
        return where
    children = _children(message)
    stack = [children] if children is not None else []
    path: list[str] = []
    while stack:
        for step, item in stack[-1]:
            if stop(len(stack), item):
                return where + _short_path(path + [_step(step, item)])
            inner = _children(item)
            if inner is not None:
                path.append(_step(step, item))
                stack.append(inner)
                break
        else:
            stack.pop()
            if path:
                path.pop()
    return None


def _short_path(steps: list[str]) -> str:
    if len(steps) <= 12:
        return "".join(steps)
    return "".join(steps[:8]) + "..." + "".join(steps[-3:])


def _unhashable_part(key: Any) -> type | None:
    """The type of what, in a (hashable) map key, arrives as a list or a dict, which cannot be
    a key: a frozenset, or a hashable subclass of list, dict or set; None when nothing does."""
    todo = [key]
    while todo:  # no recursion: a tuple key may nest as deep as the wire carries
        part = todo.pop()
        if isinstance(part, np.generic) and (part.dtype.hasobject or part.dtype.kind == "V"):
            part = part.item()
        if isinstance(part, (list, dict, set, frozenset)):
            return type(part)
        if isinstance(part, tuple):
            todo.extend(reversed(part))
    return None


def _refuse_unhashable_keys(message: Any) -> None:
    """Refuse a map key the peer could not decode (a frozenset, in it or as it), naming where.
    Walked only when the packer met a frozenset or the like (_default says so): rare."""
    found: list[tuple[Any, type]] = []

    def stop(_: int, value: Any) -> bool:
        if isinstance(value, dict):
            for key in value:
                part = _unhashable_part(key)
                if part is not None:
                    found.append((key, part))
                    return True
        return False

    where = _walk(message, "message", stop)
    if where is None:
        return
    key, part = found[0]
    name = part.__qualname__
    what = name if part is type(key) else f"{type(key).__qualname__} holding a {name}"
    arrives = "dict" if issubclass(part, dict) else "list"
    raise TypeError(f"cannot send {where} with a key {_short_repr(key)} (a {what}) over the wire: "
                    f"a {name} arrives as a {arrives}, which cannot be a key; make the key a str, "
                    "a number, bytes or a tuple of those (tuple(sorted(key)) for a frozenset)")


def _too_deep(message: Any) -> TypeError:
    limit = _nest_limit()
    where = _walk(message, "message", lambda depth, value: depth > limit)
    return TypeError(f"cannot send {where or 'the message'} over the wire: it is nested more than "
                     f"{limit} levels deep, the wire's limit (a value that contains itself?); "
                     "flatten it, or send it as str or bytes (json.dumps)")


def encode(message: Any) -> bytes:
    """Encode a message as one complete frame (header included).

    Args:
        message: A map of msgpack-able values and numpy arrays.

    Returns:
        The frame's bytes.

    Raises:
        InvalidRequestError: A string is not valid UTF-8 (a lone surrogate).
        TypeError: A value of a type the wire does not carry, a map key the peer could not
            decode (a frozenset, or a tuple holding one), or a value nested deeper than the
            wire carries (one that contains itself); the message names where it is.
    """
    try:
        packer = _local.packer
    except AttributeError:
        packer = _packer()
    try:
        payload = packer.pack(message)
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
    except ValueError as exc:
        if "recursion" not in str(exc):  # msgpack's "recursion limit exceeded": too deep
            raise
        raise _too_deep(message) from None
    if _local.key_check:  # a frozenset or the like was packed: not as (part of) a map key?
        _local.key_check = False
        _refuse_unhashable_keys(message)
    return HEADER.pack(len(payload)) + payload


def _unpacker() -> Any:
    """A thread's unpacking function: its hooks and their count of tuple marks not yet taken by
    the list hook share one closure (one unpacking at a time per thread). The count was a
    thread-local attribute, looked up twice per tuple: a tuple-heavy reply took ~1.8x as long."""
    marks = 0

    def ext_hook(code: int, data: bytes) -> Any:
        nonlocal marks
        if code == _TUPLE and not data:
            # The mark that opens a tuple's array; its items follow in the same stream, so deep
            # nesting is msgpack's own depth limit (no copy, no C stack per level).
            marks += 1
            return _MARK
        return _ext_hook(code, data)

    def list_hook(items: list[Any]) -> Any:
        nonlocal marks
        if items and items[0] is _MARK:
            marks -= 1
            del items[0]  # the unpacker's own list, dropped after this call: no copy of it
            return tuple(items)
        return items

    def unpack(payload: bytes | bytearray | memoryview) -> Any:
        nonlocal marks
        marks = 0
        message = msgpack.unpackb(payload, ext_hook=ext_hook, list_hook=list_hook, raw=False,
                                  strict_map_key=False)
        if marks:  # a tuple mark anywhere but first in an array
            raise ProtocolError("malformed tuple")
        return message

    return unpack


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
        unpack = _local.unpack
    except AttributeError:
        unpack = _local.unpack = _unpacker()
    try:
        return unpack(payload)
    except ProtocolError:
        raise
    except msgpack.StackError:  # a hostile frame: msgpack's own limit (1024 levels in 1.1)
        raise ProtocolError("undecodable frame: nested deeper than the wire's limit") from None
    except Exception as exc:  # msgpack raises several unrelated types for garbage input
        raise ProtocolError(f"undecodable frame ({type(exc).__name__}: {exc})") from None


def oversized(frame: bytes, max_frame: int = MAX_FRAME) -> str | None:
    """Why a peer would refuse ``frame`` (from :func:`encode`) unread, or None when it fits.

    A sender checks before sending: the peer drains an oversized frame and answers with a
    bare :class:`~openenv_gym.errors.ProtocolError`, after all of it crossed the socket.

    Args:
        frame: The encoded frame, header included.
        max_frame: The largest payload the peer accepts.

    Returns:
        E.g. ``"70.0 MiB (73400388 bytes) as sent, over the wire's frame limit of 64 MiB
        (67108864 bytes)"``, or None.
    """
    size = len(frame) - HEADER.size
    if size <= max_frame:
        return None
    return (f"{size / 2**20:.1f} MiB ({size} bytes) as sent, over the wire's frame limit of "
            f"{max_frame / 2**20:g} MiB ({max_frame} bytes)")


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
