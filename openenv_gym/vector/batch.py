"""Preallocated batch buffers: where per-env results from the wire land.

Flat spaces (Box, Discrete, MultiDiscrete, MultiBinary) are written row by row straight
into one array; nested ones (Dict, Tuple, Text) keep the per-env values and are joined
with Gymnasium's own :func:`~gymnasium.vector.utils.concatenate`, as ``SyncVectorEnv``
does. Actions go the other way: :func:`split_actions` turns a batched action in a space
without a column (:mod:`openenv_gym.protocol.slices`) into per-env values.

Example:
    >>> from gymnasium import spaces
    >>> buf = BatchBuffer(spaces.Box(-1, 1, (2,)), 3)
    >>> _ = buf.write(1, [0.5, 0.5])
    >>> buf.batch().tolist()
    [[0.0, 0.0], [0.5, 0.5], [0.0, 0.0]]
    >>> split_actions(spaces.Tuple([spaces.Text(5)] * 2), ("a", "b"))
    ['a', 'b']
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from openenv_gym.spaces import from_wire

__all__ = ["BatchBuffer", "split_actions"]

_FLAT = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


class BatchBuffer:
    """The batched observation of ``n`` sub-envs, updated one env at a time.

    Args:
        space: The single env's observation space.
        n: Number of sub-envs.
    """

    def __init__(self, space: spaces.Space, n: int) -> None:
        self.space = space
        self.flat = isinstance(space, _FLAT)
        self.array: Any = create_empty_array(space, n, fn=np.zeros)
        self.items: list[Any] = [space.sample() if not self.flat else None for _ in range(n)]
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


def split_actions(batched: spaces.Space, actions: Any) -> list[Any]:
    """Per-env values of a batched action in a space that has no column (Text, Dict, Tuple).

    Args:
        batched: The batched action space.
        actions: A batched action.

    Returns:
        One action per sub-env.
    """
    return list(iterate(batched, actions))
