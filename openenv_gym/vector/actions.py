"""How a vector env takes a batch of actions: one per env, checked before anything is sent.

A vector step either steps every env it should or none: an action its worker would refuse
stopped only that env, while the others stepped and the caller never saw their rewards and
episode ends. So :class:`BatchActions` refuses a bad batch here, whole — array actions
(Discrete, MultiDiscrete, MultiBinary, Box) checked as one array, text and mapping actions
one env at a time with the worker's own rule (:mod:`openenv_gym.vector.precheck`) — and
then shapes what is sent: an array for the slices' action column, or the rows to travel
inline where the env takes its actions as sent (Gym-v0's float64 Box rows).

Example:
    >>> import numpy as np
    >>> from gymnasium import spaces
    >>> from openenv_gym.protocol.slices import STEP
    >>> from gymnasium.vector.utils import batch_space
    >>> actions = BatchActions(spaces.Discrete(3), batch_space(spaces.Discrete(3), 2), 2, {})
    >>> batch = actions.batch([0, 2])
    >>> actions.to_send(batch, [0, 2], np.full(2, STEP, np.uint8)).tolist()
    [0, 2]
    >>> actions.to_send(actions.batch([0, 3]), [0, 3], np.full(2, STEP, np.uint8))
    Traceback (most recent call last):
    ...
    openenv_gym.errors.InvalidActionError: env 1: action 3 is not in the action space Discrete(3); no env stepped
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from gymnasium import spaces

from openenv_gym.errors import InvalidActionError, InvalidRequestError
from openenv_gym.protocol.slices import RESET, is_flat, valid_rows
from openenv_gym.spaces import exact_cast
from openenv_gym.vector.batch import split_actions

__all__ = ["BatchActions"]


class BatchActions:
    """The checks and shaping of a vector env's batches of actions.

    Args:
        single_action_space: One env's action space.
        action_space: The vector env's (``single_action_space`` batched).
        num_envs: Envs in the vector env.
        spec: The worker's spec: ``actions_as_sent`` (a Box env that takes float rows in
            their own dtype) and ``action_check`` (the rule for text and mapping actions).
    """

    def __init__(self, single_action_space: spaces.Space, action_space: spaces.Space,
                 num_envs: int, spec: dict[str, Any]) -> None:
        single = single_action_space
        self.single = single
        self.space = action_space
        self.num_envs = num_envs
        #: Whether actions travel in the slices' action column (array spaces).
        self.flat = is_flat(single)
        #: [start, end) of a Discrete action space, checked on every step.
        self._discrete_bounds = (int(single.start), int(single.start + single.n)) \
            if isinstance(single, spaces.Discrete) else None
        self._as_sent = isinstance(single, spaces.Box) and bool(spec.get("actions_as_sent"))
        #: Each env's check of a text or mapping action (as its worker checks it), or None:
        #: array actions are checked as a whole batch, and an env that checks its actions its
        #: own way is left to do so.
        self._check: Callable[[Any], str | None] | None = None
        if not self.flat:
            # pydantic (the check of a model's actions) loads only for envs that need it.
            from openenv_gym.vector.precheck import action_checker  # noqa: PLC0415

            self._check = action_checker(spec, single)

    def batch(self, actions: Any, per_env: bool = False) -> Any:
        """The batched action (or, ``per_env``, the per-env actions) as an array (flat spaces)
        or a list of per-env values.

        Raises:
            InvalidRequestError: Not one action per env.
            InvalidActionError: An array of the wrong dtype or shape for the space.
        """
        single = self.single
        if not self.flat:
            acts = list(actions) if per_env else split_actions(self.space, actions)
            if len(acts) != self.num_envs:
                raise InvalidRequestError(f"got {len(acts)} actions for {self.num_envs} envs")
            return acts
        arr = np.asarray(actions)
        if arr.ndim == 0 or len(arr) != self.num_envs:
            raise InvalidRequestError(f"got {1 if arr.ndim == 0 else len(arr)} actions for "
                                      f"{self.num_envs} envs")
        if not isinstance(single, spaces.Box) and arr.dtype.kind not in "iub":
            if isinstance(single, spaces.MultiBinary) and arr.dtype.kind == "f" and np.isin(arr, (0, 1)).all():
                # MultiBinary.contains takes floats 0./1. (SB3's Bernoulli policies send
                # float32), as a local env does: the column holds them exactly.
                arr = arr.astype(single.dtype)
            else:
                # A column of integers would silently truncate 0.5 to 0: refuse, as contains() does.
                raise InvalidActionError(f"actions for {single} must be integers, got dtype {arr.dtype}")
        elif arr.dtype.kind not in "biuf":
            # Text reached numpy's isfinite (a bare TypeError); complex numbers lost their
            # imaginary part in the column with only numpy's warning.
            raise InvalidActionError(f"actions for {single} must be numbers, got dtype {arr.dtype}")
        if arr.shape[1:] != single.shape:
            # Written into the action column, it failed with numpy's "could not broadcast".
            raise InvalidActionError(f"actions for {self.num_envs} envs of {single} must have shape "
                                     f"{(self.num_envs, *single.shape)}, got {arr.shape}")
        return arr

    def to_send(self, acts: Any, given: Any, cmd: np.ndarray) -> Any:
        """What a step sends for ``acts`` (:meth:`batch` of ``given``), once every env that
        steps by ``cmd`` has an action its worker takes.

        Returns:
            The array for the action column, or the per-env values to travel inline.

        Raises:
            InvalidActionError: The first env that steps with an action its worker would
                refuse; no env stepped.
        """
        if self.flat:
            self._refuse_out_of_space(acts, cmd)
            return self.for_column(acts, given)
        if self._check is not None:
            self._refuse_invalid(acts, cmd)
        return acts

    def for_column(self, arr: np.ndarray, given: Any) -> np.ndarray | list[Any]:
        """``arr`` for the action column, or the rows to travel inline: ``given``'s own rows
        (the caller's list) or ``arr``'s in their own dtype."""
        if not self._as_sent or arr.dtype.kind not in "fiu":
            return arr
        if isinstance(given, (list, tuple)) and not all(isinstance(row, np.ndarray) for row in given):
            # SyncVectorEnv hands each env its row as given: a list of Python numbers, which a
            # float32-state env (MountainCarContinuous) adds in float32 where the same numbers
            # as an np.float64 or np.int64 row turn its state float64. The env's parse_action
            # keeps a list of numbers (or a shape-() Box's number) as sent. A list of arrays
            # (space.sample()'s) is a batch of arrays, as an array's rows are.
            return list(given)
        if arr.dtype != self.single.dtype:
            # The column holds the space's dtype: float64 actions written there would reach an
            # env that takes them as sent (Gym-v0) rounded to float32, where a local env gets
            # them as they are. Other envs cast every action to their space anyway: the column
            # serves them.
            return list(arr)
        return arr

    def _refuse_out_of_space(self, arr: np.ndarray, cmd: np.ndarray) -> None:
        """Refuse a batch in which an env that steps has an action outside the action space."""
        single = self.single
        if self._discrete_bounds is not None:
            low, high = self._discrete_bounds
            if len(arr) <= 64:  # every step: Python's min/max beat numpy's reductions on a short list
                values = arr.tolist()
                lowest, highest = min(values), max(values)
            else:
                lowest, highest = arr.min(), arr.max()
            if low <= lowest and highest < high:  # the usual batch
                return
            ok = (arr >= low) & (arr < high)
        else:
            # As the worker reads the action: float rows cast to the space's dtype (the
            # column), or as sent (actions_as_sent: only finiteness is checked, in the dtype
            # that is sent). Integers are checked before the cast, which would wrap 256 to 0 in
            # a uint8 column where Gymnasium's contains() refuses 256.
            if self._as_sent or arr.dtype.kind in "iub":
                column, exact = arr, None
            else:  # 1.5 into an integer column is refused, as the single env's from_wire does
                column, exact = exact_cast(arr, single.dtype)
            ok = valid_rows(single, column, bounds=not self._as_sent)
            if exact is not None:
                ok &= exact.reshape(len(arr), -1).all(axis=1)
            if ok.all():
                return
        bad = np.flatnonzero(~ok & (cmd < RESET))  # an env being reset ignores its action
        if bad.size:
            i = int(bad[0])
            raise InvalidActionError(f"env {i}: action {arr[i].tolist()!r} is not in the action "
                                     f"space {single}; no env stepped")

    def _refuse_invalid(self, acts: list[Any], cmd: np.ndarray) -> None:
        """Refuse a batch of text or mapping actions in which an env that steps has one its
        worker would refuse."""
        check = self._check
        for i, c in enumerate(cmd.tolist()):
            if c < RESET:  # an env being reset (or skipped) ignores its action
                problem = check(acts[i])  # type: ignore[misc]
                if problem is not None:
                    raise InvalidActionError(f"env {i}: {problem}; no env stepped")
