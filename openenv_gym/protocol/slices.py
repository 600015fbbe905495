"""The vector fast path's contract: a slice of envs stepped from one message, columns in shared memory.

A worker hosts a *slice*: ``n`` sub-envs of one vector env. One ``slice_step`` message
steps (or resets) all of them; what each env does is a command byte. The per-env columns
— commands, actions, observations, rewards, flags — live in one buffer whose layout both
sides derive from the spaces with :class:`SliceLayout` (this module is the only place it
is defined). On a Unix socket the buffer is a sealed ``memfd`` the trainer creates and
hands to the worker with the open request (``SCM_RIGHTS``), so a step moves no array
bytes through the socket at all, as Gymnasium's ``AsyncVectorEnv`` and EnvPool do with
their shared memory. The seals forbid resizing: a hostile worker can write its own
columns (as it could send any reply) but cannot shrink the mapping under the trainer.
Over TCP (Ray, remote hosts) the same columns travel inline in the messages instead.

Only flat spaces (Box, Discrete, MultiDiscrete, MultiBinary) get a column; other
observations and actions (text, dicts) travel inline as lists. Infos get columns too when
the env declares the plain values every step reports (its ``info_types``, as EnvPool's
info spec): an env whose info is exactly those keys and types writes them there and sets
its ``info_ok`` flag; any other info travels inline.

Example:
    >>> from gymnasium import spaces
    >>> layout = SliceLayout(spaces.Box(-1, 1, (4,)), spaces.Discrete(2), 3)
    >>> cols = layout.views(bytearray(layout.size))
    >>> cols["obs"].shape, cols["action"].dtype.name, cols["cmd"].shape
    ((3, 4), 'int64', (3,))
    >>> layout = SliceLayout(spaces.Box(-1, 1, (4,)), spaces.Discrete(2), 3, {"lives": "int"})
    >>> layout.info_keys, layout.info_views(layout.views(bytearray(layout.size)))["lives"].dtype.name
    (('lives',), 'int64')
"""

from __future__ import annotations

import fcntl
import mmap
import os
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

from openenv_gym.protocol.wire import encode

__all__ = ["STEP", "STEP_AUTORESET", "STEP_THEN_RESET", "RESET", "SKIP", "INFO_TYPES", "PLAIN_REPLY", "SliceLayout",
           "is_flat", "check_info_types", "create_shared", "map_shared", "valid_rows"]

#: Step the env.
STEP = 0
#: Step; if the episode ends, reset at once and report the final obs/info (``SAME_STEP``).
STEP_AUTORESET = 1
#: Step, then reset whatever happened (a ``SAME_STEP`` time limit ends the episode).
STEP_THEN_RESET = 2
#: Reset (seed/options from the message).
RESET = 3
#: Leave the env alone. (Commands below RESET step the env.)
SKIP = 4

#: The frame of a ``slice_step`` reply with nothing outside the columns (the usual step's,
#: in shared memory): a client compares the frame it reads with it instead of decoding it.
PLAIN_REPLY = encode({"ok": True})

#: Info value types that get a column: the name an env declares, the Python type its
#: value must have, and the column's dtype (the one Gymnasium's ``_add_info`` batches it in).
INFO_TYPES: dict[str, tuple[type, np.dtype]] = {
    "int": (int, np.dtype(int)),
    "float": (float, np.dtype(float)),
    "bool": (bool, np.dtype(np.bool_)),
}

_FLAT = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
_ALIGN = 64  # cache-line aligned columns


def is_flat(space: spaces.Space) -> bool:
    """Whether a space's values are fixed-shape arrays that get a column in the buffer."""
    return isinstance(space, _FLAT)


def check_info_types(info_types: Any) -> dict[str, str]:
    """Refuse an ``info_types`` declaration that cannot have columns; returns it as a dict.

    Raises:
        ValueError: Not a mapping, a type not in :data:`INFO_TYPES`, or a key that would meet
            Gymnasium's own (``_k`` masks, ``final_obs``/``final_info``).

    Example:
        >>> check_info_types({"lives": "int"})
        {'lives': 'int'}
    """
    if not isinstance(info_types, dict):
        raise ValueError(f"info_types must map info keys to {', '.join(INFO_TYPES)}, got {info_types!r}")
    for key, name in info_types.items():
        if type(key) is not str or key.startswith("_") or key in ("final_obs", "final_info"):
            # Gymnasium batches key "k" beside its mask "_k", and keeps the final_* apart.
            raise ValueError(f"info key {key!r} cannot have a column: use a str that does not "
                             "start with '_' and is not final_obs/final_info")
        if name not in INFO_TYPES:
            raise ValueError(f"info {key!r} has type {name!r}; an info column is one of "
                             f"{', '.join(INFO_TYPES)}")
    return dict(info_types)


def _info_column(key: str) -> str:
    """The column holding info ``key`` (named apart from the fixed columns)."""
    return "info." + key


class SliceLayout:
    """Where each column of a slice of ``n`` envs lives in its buffer.

    Args:
        observation_space: The single env's observation space.
        action_space: The single env's action space.
        n: Envs in the slice.
        info_types: The env's declared infos, key -> a name in :data:`INFO_TYPES`
            (a worker's ``spec`` carries them); each gets a column, plus ``info_ok``.

    Attributes:
        size: Bytes the buffer needs.
        flat_obs: Observations have a column (else they travel inline).
        flat_action: Actions have a column (else they travel inline).
        info_keys: The infos with a column, in declared order.

    Raises:
        ValueError: ``info_types`` is refused by :func:`check_info_types`.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, n: int,
                 info_types: dict[str, str] | None = None) -> None:
        self.n = n
        self.flat_obs = is_flat(observation_space)
        self.flat_action = is_flat(action_space)
        columns: list[tuple[str, np.dtype, tuple[int, ...]]] = [
            ("cmd", np.dtype(np.uint8), (n,)),
            ("reward", np.dtype(np.float64), (n,)),
            ("terminated", np.dtype(np.bool_), (n,)),
            ("truncated", np.dtype(np.bool_), (n,)),
        ]
        if self.flat_action:
            batched = batch_space(action_space, n)
            columns.append(("action", np.dtype(batched.dtype), tuple(batched.shape)))
        if self.flat_obs:
            batched = batch_space(observation_space, n)
            columns.append(("obs", np.dtype(batched.dtype), tuple(batched.shape)))
        info_types = check_info_types(info_types or {})
        self.info_keys: tuple[str, ...] = tuple(info_types)
        if info_types:
            columns.append(("info_ok", np.dtype(np.bool_), (n,)))
        for key, name in info_types.items():
            columns.append((_info_column(key), INFO_TYPES[name][1], (n,)))
        self.columns: dict[str, tuple[int, np.dtype, tuple[int, ...]]] = {}
        offset = 0
        for name, dtype, shape in columns:
            self.columns[name] = (offset, dtype, shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            offset += -(-nbytes // _ALIGN) * _ALIGN
        self.size = max(offset, _ALIGN)

    def views(self, buffer: Any) -> dict[str, np.ndarray]:
        """Numpy views of every column over ``buffer`` (an mmap, bytearray, ...)."""
        return {name: np.ndarray(shape, dtype, buffer=buffer, offset=offset)
                for name, (offset, dtype, shape) in self.columns.items()}

    def info_views(self, views: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The declared infos' columns among :meth:`views`' result, by info key (looked up
        once per slice, not per step)."""
        return {key: views[_info_column(key)] for key in self.info_keys}


def valid_rows(space: spaces.Space, column: np.ndarray, bounds: bool = True) -> np.ndarray:
    """Which rows of an action column lie in ``space`` (MultiDiscrete, MultiBinary, Box), at once:
    the worker's check of its slice, and the trainer's of a whole batch before it sends any.

    ``bounds=False`` (:attr:`Environment.enforce_action_bounds`): a Box row needs only be finite.

    Example:
        >>> valid_rows(spaces.Box(-1, 1, (2,)), np.array([[0.5, 0.0], [2.0, 0.0]])).tolist()
        [True, False]
    """
    rows = column.reshape(len(column), -1)
    if isinstance(space, spaces.MultiDiscrete):
        start, nvec = space.start.reshape(-1), space.nvec.reshape(-1)
        return ((rows >= start) & (rows < start + nvec)).all(axis=1)
    if isinstance(space, spaces.MultiBinary):
        return ((rows == 0) | (rows == 1)).all(axis=1)
    if not bounds:
        return np.isfinite(rows).all(axis=1)
    low, high = space.low.reshape(-1), space.high.reshape(-1)  # Box: NaN fails both tests
    return ((rows >= low) & (rows <= high)).all(axis=1)


def create_shared(size: int) -> tuple[int, mmap.mmap]:
    """Create a sealed shared-memory buffer for a slice (trainer side).

    Args:
        size: Bytes.

    Returns:
        The memfd (to send to the worker, then close) and the trainer's mapping of it.
    """
    fd = os.memfd_create("openenv-gym-slice", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        # The worker may be hostile: it must not be able to shrink the buffer under our
        # mapping (a SIGBUS in the trainer), nor grow it.
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        return fd, mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        raise


def map_shared(fd: int, size: int) -> mmap.mmap:
    """Map a slice buffer received from the trainer (worker side); closes ``fd``.

    Raises:
        ValueError: The file is smaller than the layout needs.
    """
    try:
        actual = os.fstat(fd).st_size
        if actual < size:
            raise ValueError(f"shared buffer has {actual} bytes; the slice layout needs {size}")
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)
