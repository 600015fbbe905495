"""Preallocated batch buffers: where per-env results from the wire land.

Flat spaces (Box, Discrete, MultiDiscrete, MultiBinary) are written row by row straight
into one array; nested ones (Dict, Tuple, Text) keep the per-env values and are joined
with Gymnasium's own :func:`~gymnasium.vector.utils.concatenate`, as ``SyncVectorEnv``
does. Actions go the other way: :func:`split_actions` turns a batched action in a space
without a column (:mod:`openenv_gym.protocol.slices`) into per-env values.
:func:`batch_infos` joins per-env infos into Gymnasium's batched info dict.

Example:
    >>> from gymnasium import spaces
    >>> buf = BatchBuffer(spaces.Box(-1, 1, (2,)), 3)
    >>> _ = buf.write(1, [0.5, 0.5])
    >>> buf.batch().tolist()
    [[0.0, 0.0], [0.5, 0.5], [0.0, 0.0]]
    >>> split_actions(spaces.Tuple([spaces.Text(5)] * 2), ("a", "b"))
    ['a', 'b']
    >>> import gymnasium as gym
    >>> envs = gym.make_vec("CartPole-v1", num_envs=3)
    >>> batch_infos(3, {0: {"lives": 3}, 2: {"lives": 2}}, envs._add_info)
    {'lives': array([3, 0, 2]), '_lives': array([ True, False,  True])}
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from openenv_gym.errors import InvalidActionError
from openenv_gym.protocol.slices import INFO_TYPES, is_flat
from openenv_gym.spaces import from_wire

__all__ = ["BatchBuffer", "split_actions", "batch_infos"]


class BatchBuffer:
    """The batched observation of ``n`` sub-envs, updated one env at a time.

    Args:
        space: The single env's observation space.
        n: Number of sub-envs.
    """

    def __init__(self, space: spaces.Space, n: int) -> None:
        self.space = space
        self.flat = is_flat(space)
        self.array: Any = create_empty_array(space, n, fn=np.zeros)
        # Placeholders until each env's first observation: the space's empty value (""
        # for Text, zeros), not a sample, which for a Text of up to 1 MiB (Coding's
        # stdout) costs ~0.1 s and megabytes per env, in every make_vec.
        self.items: list[Any] = [None if self.flat else _placeholder(space) for _ in range(n)]
        self._dirty = False

    def write(self, i: int, value: Any) -> Any:
        """Store env ``i``'s observation (as decoded from the wire); returns it normalized."""
        value = from_wire(value, self.space)
        if self.flat:
            self.array[i] = value
        else:
            self.items[i] = value
            self._dirty = True
        return value

    def get(self, i: int) -> Any:
        """Env ``i``'s latest observation (a copy: the buffer row changes on the next write)."""
        return self.array[i].copy() if self.flat else self.items[i]

    def batch(self, copy_out: bool = True) -> Any:
        """The batched observation (a copy unless ``copy_out`` is False)."""
        if self._dirty:
            self.array = concatenate(self.space, self.items, self.array)
            self._dirty = False
        if not copy_out:
            return self.array
        return self.array.copy() if self.flat else copy.deepcopy(self.array)


def _placeholder(space: spaces.Space) -> Any:
    """A cheap value of ``space`` for an env not yet observed: empty text, zeros."""
    if isinstance(space, spaces.Dict):
        return {key: _placeholder(sub) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_placeholder(sub) for sub in space.spaces)
    if isinstance(space, spaces.Text):
        return min(space.character_set) * space.min_length if space.min_length else ""
    if is_flat(space):
        return create_empty_array(space, 1, fn=np.zeros)[0]
    return space.sample()  # Sequence, Graph, custom spaces


def split_actions(batched: spaces.Space, actions: Any) -> list[Any]:
    """Per-env values of a batched action in a space that has no column (Text, Dict, Tuple).

    Args:
        batched: The batched action space.
        actions: A batched action.

    Returns:
        One action per sub-env.

    Raises:
        InvalidActionError: ``actions`` is not batched as ``batched`` is (a list of per-env
            dicts for a Dict space, say).
    """
    if isinstance(batched, spaces.Dict) and isinstance(actions, dict) and actions:
        unknown = [key for key in actions if key not in batched.spaces]
        if unknown:
            # Dropped, a misspelt field ("timout", "submitt") left the env its default, where
            # a single env refuses it (Dict.contains; a model's extra="forbid").
            raise InvalidActionError(f"actions {type(actions).__name__} do not fit the batched action "
                                     f"space {batched}: it has no field {', '.join(map(repr, unknown))} "
                                     f"(its fields: {', '.join(map(repr, batched.spaces))})")
        given = {key: space for key, space in batched.spaces.items() if key in actions}
        if given and len(given) < len(batched.spaces):
            # Fields left out are left to the env, as a single env's action may leave them
            # (a model env fills its defaults: Coding's timeout); one that needs them says so.
            batched = spaces.Dict(given)
    try:
        return list(iterate(batched, actions))
    except (TypeError, KeyError, IndexError, ValueError, AssertionError) as exc:
        hint = ""
        if isinstance(batched, spaces.Dict) and batched.spaces:
            key = next(iter(batched.spaces))
            hint = f"; a Dict space takes a dict of per-env values, e.g. {{{key!r}: (env 0's, env 1's, ...)}}"
        raise InvalidActionError(f"actions {type(actions).__name__} do not fit the batched action "
                                 f"space {batched}{hint} ({type(exc).__name__}: {exc})") from None


#: Plain info values batched column-wise, and the dtype Gymnasium's ``_add_info`` gives them.
_DTYPES = dict(INFO_TYPES.values())


def batch_infos(num_envs: int, infos: dict[int, dict[str, Any]],
                add_info: Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]) -> dict[str, Any]:
    """Gymnasium's batched info dict of per-env infos: what ``add_info`` env by env would give.

    The usual case, every env reporting the same keys with plain ``int``/``float``/``bool``
    values (Atari's ``lives`` and frame numbers), is built one key at a time instead of one
    env and key at a time. Anything else goes through ``add_info`` (Gymnasium's
    ``VectorEnv._add_info``) in env order.

    Args:
        num_envs: Number of sub-envs.
        infos: Env index -> that env's info (envs without one are left out).
        add_info: The vector env's ``_add_info``.

    Returns:
        ``{key: values, "_" + key: mask}`` for every key.
    """
    if num_envs and len(infos) == num_envs:
        out = _columns(num_envs, [infos[i] for i in range(num_envs)])
        if out is not None:
            return out
    out = {}
    for i in sorted(infos):
        out = add_info(out, infos[i], i)
    return out


def _columns(num_envs: int, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """:func:`batch_infos` of one info per env, key by key; None when a value is not plain."""
    first = rows[0]
    if any(len(row) != len(first) for row in rows):
        return None
    out: dict[str, Any] = {}
    everyone = np.ones(num_envs, dtype=np.bool_)
    for key, value in first.items():
        dtype = _DTYPES.get(type(value))
        # Gymnasium treats "final_obs" apart, and a "_"-key would meet another key's mask.
        if dtype is None or type(key) is not str or key.startswith("_") or key == "final_obs":
            return None
        try:
            array = np.array([row[key] for row in rows])
        except (KeyError, ValueError, TypeError):
            return None
        # Another type later (a float after an int, None, an array) would be cast or fail
        # differently in Gymnasium's array of the first value's type: leave it to add_info.
        if array.dtype != dtype or array.shape != (num_envs,):
            return None
        out[key] = array
        out["_" + key] = everyone.copy()
    return out
