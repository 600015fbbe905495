"""Gymnasium spaces on the wire: the one place that describes, rebuilds and normalizes them.

A worker describes its spaces with :func:`space_to_dict` (plain JSON, served by ``/spec``);
the client rebuilds them with :func:`space_from_dict` and turns decoded wire values back
into the exact Python types the space expects with :func:`from_wire`.

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> box = spaces.Box(0, 255, (2, 2), np.uint8)
    >>> space_from_dict(space_to_dict(box)) == box
    True
    >>> from_wire([[1, 2], [3, 4]], box).dtype
    dtype('uint8')
"""

from __future__ import annotations

import base64
import string
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_gym._text import short_repr

__all__ = ["UnicodeText", "space_to_dict", "space_from_dict", "from_wire", "exact_cast", "owned",
           "not_in_space", "short_repr", "to_jsonable"]

#: Characters :meth:`UnicodeText.sample` draws from (membership accepts any text).
SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " \n\t"


class UnicodeText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` that holds any text: unicode, newlines, tabs.

    Gymnasium's ``Text`` only contains strings over a finite charset; code, shell output
    and chat messages need every character. Sampling still draws from printable ASCII.

    Args:
        max_length: Longest string the space contains.
        min_length: Shortest string the space contains (default 0).
        seed: Seed for :meth:`sample`.

    Example:
        >>> UnicodeText(16).contains("héllo\\nwörld ✓")
        True
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        """True when ``x`` is a str whose length is within the bounds."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )


def _bound_to_wire(bound: np.ndarray) -> Any:
    # A uniform bound travels as one number: an 84x84x4 image space stays a few bytes.
    flat = bound.reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return _scalar(flat[0])
    return [_scalar(v) for v in flat]


def _scalar(v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float) and not np.isfinite(v):
        return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
    return v


def space_to_dict(space: spaces.Space) -> dict[str, Any]:
    """Describe a space as a JSON-compatible dict.

    Args:
        space: Box, Discrete, MultiDiscrete, MultiBinary, Text, Dict or Tuple (nested).

    Returns:
        A dict that :func:`space_from_dict` turns back into an equal space.

    Raises:
        TypeError: For a space type that has no wire form.

    Example:
        >>> space_to_dict(spaces.Discrete(3))
        {'type': 'Discrete', 'n': 3, 'start': 0}
    """
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": np.dtype(space.dtype).str,
            "low": _bound_to_wire(space.low),
            "high": _bound_to_wire(space.high),
        }
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "start": space.start.tolist(),
            "dtype": np.dtype(space.dtype).str,
        }
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": list(np.atleast_1d(space.n).tolist())}
    if isinstance(space, UnicodeText):
        return {"type": "UnicodeText", "min_length": space.min_length, "max_length": space.max_length}
    if isinstance(space, spaces.Text):
        return {
            "type": "Text",
            "min_length": space.min_length,
            "max_length": space.max_length,
            "charset": "".join(space.character_list),
        }
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_dict(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_dict(s) for s in space.spaces]}
    if isinstance(space, spaces.Sequence):
        return {"type": "Sequence", "space": space_to_dict(space.feature_space), "stack": bool(space.stack)}
    if isinstance(space, spaces.OneOf):
        return {"type": "OneOf", "spaces": [space_to_dict(s) for s in space.spaces]}
    if isinstance(space, spaces.Graph):
        return {"type": "Graph", "node_space": space_to_dict(space.node_space),
                "edge_space": None if space.edge_space is None else space_to_dict(space.edge_space)}
    raise TypeError(f"space {space!r} has no wire form; use Box, Discrete, MultiDiscrete, "
                    "MultiBinary, Text, Dict, Tuple, Sequence, OneOf or Graph")


def _bound_from_wire(v: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    def num(x: Any) -> float:
        return float(x) if isinstance(x, str) else x

    if isinstance(v, list):
        return np.array([num(x) for x in v], dtype=dtype).reshape(shape)
    return np.full(shape, num(v), dtype=dtype)


def space_from_dict(d: dict[str, Any]) -> spaces.Space:
    """Rebuild a space described by :func:`space_to_dict`.

    Args:
        d: The description.

    Returns:
        The space.

    Example:
        >>> space_from_dict({"type": "Discrete", "n": 3, "start": 0})
        Discrete(3)
    """
    kind = d["type"]
    if kind == "Box":
        shape = tuple(d["shape"])
        dtype = np.dtype(d["dtype"])
        return spaces.Box(
            _bound_from_wire(d["low"], shape, dtype),
            _bound_from_wire(d["high"], shape, dtype),
            shape=shape,
            dtype=dtype,
        )
    if kind == "Discrete":
        return spaces.Discrete(d["n"], start=d.get("start", 0))
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(d["nvec"], dtype=np.dtype(d["dtype"]), start=d.get("start"))
    if kind == "MultiBinary":
        n = d["n"]
        return spaces.MultiBinary(n[0] if len(n) == 1 else n)
    if kind == "UnicodeText":
        return UnicodeText(d["max_length"], min_length=d["min_length"])
    if kind == "Text":
        return spaces.Text(d["max_length"], min_length=d["min_length"], charset=d["charset"])
    if kind == "Dict":
        # Pairs, not a mapping: gymnasium sorts a mapping's keys, while the served space's
        # order (an env may build its Dict from pairs) decides sampling and flattening.
        return spaces.Dict([(k, space_from_dict(s)) for k, s in d["spaces"].items()])
    if kind == "Tuple":
        return spaces.Tuple([space_from_dict(s) for s in d["spaces"]])
    if kind == "Sequence":
        return spaces.Sequence(space_from_dict(d["space"]), stack=bool(d.get("stack", False)))
    if kind == "OneOf":
        return spaces.OneOf([space_from_dict(s) for s in d["spaces"]])
    if kind == "Graph":
        edge = d.get("edge_space")
        return spaces.Graph(space_from_dict(d["node_space"]), None if edge is None else space_from_dict(edge))
    raise ValueError(f"unknown space type {kind!r} in spec")


def from_wire(value: Any, space: spaces.Space, copy: bool = True, keep_dtype: bool = False) -> Any:
    """Turn a decoded wire value into the Python type ``space`` holds.

    An older peer brings back lists for tuples; this makes them ``tuple``, discrete values
    ints as the env gave them (a Python ``int``, as Gymnasium's own discrete envs return
    them, or a numpy integer; a bool becomes an ``int``) and arrays of the space's dtype,
    so ``space.contains`` holds (and holds without warning: ``Box.contains`` warns about
    any value that is not an array).
    Values that do not fit are returned as they are (their arrays copied, with ``copy``), for
    the caller's ``contains`` check; text where an array belongs as an array of text, which
    ``contains`` refuses (it would read a list ``["0.5"]`` as numbers).

    Args:
        value: The decoded value.
        space: The space it belongs to.
        copy: Copy arrays (wire arrays are read-only views of the frame, and users expect
            writable ones); ``False`` for a value only checked, as a worker checks its env's.
        keep_dtype: Leave an array of another dtype than the space's as sent (an env's
            observation, which a local env hands over as it made it: float64 for a float32
            ``Box``); ``False`` casts it where no value changes (an action, which the env
            expects in its space's dtype).

    Returns:
        The normalized value.

    Example:
        >>> from_wire([1, 2], spaces.Tuple((spaces.Discrete(3), spaces.Discrete(3))))
        (1, 2)
        >>> from_wire([0.5, 1.0], spaces.Box(0, 1, (2,)))
        array([0.5, 1. ], dtype=float32)
        >>> from_wire(np.array([0.5, 1.0]), spaces.Box(0, 1, (2,)), keep_dtype=True).dtype
        dtype('float64')
    """
    out = _normalized(value, space, copy, keep_dtype)
    # A value that does not fit comes back as sent: still the caller's to write into, as what
    # an env hands over locally is, even where the env strays from its own space.
    return owned(out) if copy and out is value else out


def _normalized(value: Any, space: spaces.Space, copy: bool, keep: bool = False) -> Any:
    """:func:`from_wire`'s work, before a value left as sent is copied."""
    try:
        if isinstance(space, spaces.Box):
            if isinstance(value, np.generic) and value.dtype == space.dtype and space.shape == ():
                return value  # a numpy scalar stays one, as the env handed it over
            # Not reshaped: an action of another shape is refused, as Box.contains refuses it.
            return _as_dtype(value, space.dtype, copy, keep)
        if isinstance(space, spaces.Discrete):
            if isinstance(value, np.integer) or (isinstance(value, int) and not isinstance(value, bool)):
                return value
            if isinstance(value, (bool, np.bool_)):
                return int(value)
            return value
        if isinstance(space, (spaces.MultiDiscrete, spaces.MultiBinary)):
            return _as_dtype(value, space.dtype, copy, keep)
        if isinstance(space, spaces.Dict):
            if not isinstance(value, dict):
                return value
            return {k: from_wire(v, space.spaces[k], copy, keep) if k in space.spaces else v for k, v in value.items()}
        if isinstance(space, spaces.Tuple):
            if not isinstance(value, (list, tuple)) or len(value) != len(space.spaces):
                return value
            return tuple(from_wire(v, s, copy, keep) for v, s in zip(value, space.spaces))
        if isinstance(space, spaces.OneOf):
            # (index, value), as OneOf.sample gives it: the index a numpy int, as locally
            if not isinstance(value, (list, tuple)) or len(value) != 2:
                return value
            index, sub = value
            if isinstance(index, (int, np.integer)) and not isinstance(index, bool) \
                    and 0 <= index < len(space.spaces):
                return (np.int64(index), from_wire(sub, space.spaces[int(index)], copy, keep))
            return tuple(value)
        if isinstance(space, spaces.Sequence):
            if space.stack:  # one array (or a Dict/Tuple of arrays) for the whole sequence
                feature = space.feature_space
                if isinstance(feature, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)):
                    return _as_dtype(value, space.stacked_feature_space.dtype, copy, keep)
                return value
            if not isinstance(value, (list, tuple)):
                return value
            return tuple(from_wire(v, space.feature_space, copy, keep) for v in value)
        if isinstance(space, spaces.Graph):
            if not isinstance(value, (list, tuple)) or len(value) != 3:
                return value
            nodes, edges, links = value
            node_dtype = space.node_space.dtype
            return spaces.GraphInstance(
                _as_dtype(nodes, node_dtype, copy, keep),
                None if edges is None or space.edge_space is None else _as_dtype(edges, space.edge_space.dtype, copy, keep),
                None if links is None else _as_dtype(links, np.dtype(np.int64) if not isinstance(links, np.ndarray)
                                                      else links.dtype, copy, keep))
    except (TypeError, ValueError, OverflowError):
        return value
    return value


def _as_dtype(value: Any, dtype: np.dtype, copy: bool, keep: bool = False) -> Any:
    """``value`` as an array of ``dtype``; ``value`` itself where that cast would change it
    (a float truncated to an integer, an integer wrapped into a narrower one), for the
    caller's ``contains`` to judge as a local env's space would: 1.5 is not ``1``; and, with
    ``keep``, an array of another dtype (the env's own, which the wire kept)."""
    if isinstance(value, np.ndarray) and (value.dtype == dtype or keep):  # the usual case first
        return value.copy() if copy else value
    arr = np.asarray(value)
    if arr.dtype == dtype:
        return arr  # a new array already (value was not one of this dtype)
    if arr.dtype.kind in "US":
        # As an array of text, which contains() refuses: Box.contains casts a list with the
        # space's dtype, so ["0.5"] (a JSON client's numbers as strings) passed, and reached
        # the env as strings (Pendulum then raised: a 500 for the caller's mistake).
        return arr
    if arr.dtype.kind not in "biuf":  # objects: not this space's, contains() says so
        return value
    cast, exact = exact_cast(arr, dtype)
    return cast if exact is None or exact.all() else value


def exact_cast(arr: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None]:
    """``arr`` cast to ``dtype``, and where that cast kept the value. To a float dtype every
    value counts as kept (floats round, as ``Box.contains`` casts them); to an integer or
    bool dtype only those not truncated or wrapped (1.5 is not ``1``; NaN is nothing).

    Args:
        arr: A numeric array.
        dtype: The dtype to cast to.

    Returns:
        The cast array (``arr`` itself if it has that dtype), and a bool array of ``arr``'s
        shape, or None for a float dtype (nothing to compare: every step's usual case).

    Example:
        >>> cast, exact = exact_cast(np.array([1.0, 1.5]), np.dtype(np.int64))
        >>> cast.tolist(), exact.tolist()
        ([1, 1], [True, False])
    """
    with np.errstate(invalid="ignore", over="ignore"):  # NaN, inf: compared below, then refused
        cast = arr.astype(dtype, copy=False)
        return cast, (cast == arr if np.dtype(dtype).kind in "biu" else None)


def owned(value: Any) -> Any:
    """``value`` (a decoded info, frame or attribute) with its read-only arrays, views of the
    wire frame, copied: what an env hands over locally is the caller's to write into. Dicts
    and lists are updated in place (a decoded message is the caller's own).

    Args:
        value: A decoded value (an info dict, a reply).

    Returns:
        ``value``, its arrays writable.

    Example:
        >>> view = np.frombuffer(b"\\x01\\x02", np.uint8)
        >>> owned({"mask": view})["mask"].flags.writeable
        True
    """
    if isinstance(value, np.ndarray):
        return value if value.flags.writeable else value.copy()
    if type(value) is dict:
        for key, item in value.items():
            if isinstance(item, (np.ndarray, dict, list, tuple)):
                value[key] = owned(item)
        return value
    if type(value) is list:
        for i, item in enumerate(value):
            if isinstance(item, (np.ndarray, dict, list, tuple)):
                value[i] = owned(item)
        return value
    if type(value) is tuple:
        items = tuple(owned(item) for item in value)
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def not_in_space(value: Any, space: spaces.Space, shown: Any = None) -> str:
    """Why an action is refused: "action ... is not in the action space ...", and for a
    ``Dict`` or ``Tuple`` space the part that does not fit (a missing key, an extra one, the
    item outside its own space), which the whole space's text leaves the reader to find.

    Args:
        value: The action as the env checks it (after :func:`from_wire`).
        space: The action space, whose ``contains(value)`` is False.
        shown: What to quote as the action (the action as sent); ``value`` by default.

    Returns:
        The message.

    Example:
        >>> space = spaces.Dict({"a": spaces.Discrete(2), "b": spaces.MultiBinary(2)})
        >>> not_in_space({"a": 1, "b": np.array([2, 0])}, space, {"a": 1, "b": [2, 0]})
        "action {'a': 1, 'b': [2, 0]} is not in the action space Dict('a': Discrete(2), 'b': MultiBinary(2)): at ['b']: [2, 0] is not in MultiBinary(2)"
    """
    text = f"action {short_repr(value if shown is None else shown)} is not in the action space {space}"
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        where = _misfit(value, space, "")
        if where:
            text += f": {where}"
    return text


def _misfit(value: Any, space: spaces.Space, path: str) -> str | None:
    """Where ``value`` leaves ``space`` (the first place found), as "at ['key'][0]: ..."."""
    at = f"at {path}: " if path else ""
    if isinstance(space, spaces.Dict):
        if not isinstance(value, dict):
            return f"{at}a mapping with keys {list(space.spaces)} is needed, got {type(value).__name__}"
        missing = [k for k in space.spaces if k not in value]
        extra = [k for k in value if k not in space.spaces]
        if missing or extra:
            parts = ([f"missing {', '.join(map(repr, missing))}"] if missing else []) + \
                    ([f"unexpected {', '.join(map(repr, extra))}"] if extra else [])
            return f"{at}keys: {'; '.join(parts)}"
        return next((m for k, sub in space.spaces.items()
                     if (m := _misfit(value[k], sub, f"{path}[{k!r}]"))), None)
    if isinstance(space, spaces.Tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(space.spaces):
            got = f"{len(value)} items" if isinstance(value, (tuple, list)) else type(value).__name__
            return f"{at}a sequence of {len(space.spaces)} items is needed, got {got}"
        return next((m for i, sub in enumerate(space.spaces)
                     if (m := _misfit(value[i], sub, f"{path}[{i}]"))), None)
    if space.contains(value):
        return None
    shown = value.tolist() if isinstance(value, (np.ndarray, np.generic)) else value
    return f"{at}{short_repr(shown)} is not in {space}"


def to_jsonable(value: Any) -> Any:
    """Make a value JSON-serializable for the HTTP API: arrays become nested lists, bytes
    base64 text (JSON has no bytes; the binary path carries them as they are).

    Args:
        value: An observation, info dict or action.

    Returns:
        The same structure with numpy objects turned into Python ones.

    Example:
        >>> to_jsonable({"packet": b"\\xff\\x00", "n": np.int64(3)})
        {'packet': '/wA=', 'n': 3}
    """
    if isinstance(value, np.ndarray):
        out = value.tolist()
        return to_jsonable(out) if value.dtype.kind in "SVO" else out  # bytes inside
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value
