"""The worker side of the vector fast path: a slice of sessions stepped from one message.

A :class:`VectorSlice` owns ``n`` sessions of its server. Each ``slice_step`` runs the
per-env commands of :mod:`openenv_gym.protocol.slices` (step, step-and-autoreset, reset,
skip) over all of them in one tight loop: actions are read from the action column
(checked for the whole column at once), observations, rewards and flags written straight
into their columns, and so are infos that match the env's declared ``info_types``. Only
what has no column — other non-empty infos, the final observation of a same-step
autoreset, errors, non-array observations — goes back in the reply. An error in
one env (a bad action, an env bug) is that env's error; the others step on.

Example:
    >>> from openenv_gym.envs.gym.env import GymEnv
    >>> from openenv_gym.protocol.slices import RESET, STEP
    >>> from openenv_gym.server.service import EnvService
    >>> service = EnvService(lambda: GymEnv("CartPole-v1"))
    >>> piece = VectorSlice(service, 2)
    >>> piece.columns["cmd"][:] = RESET
    >>> _ = piece.step({"seeds": [1, 2]})
    >>> piece.columns["cmd"][:] = STEP
    >>> piece.columns["action"][:] = [0, 1]
    >>> _ = piece.step({})
    >>> piece.columns["obs"].shape, piece.columns["reward"].tolist()
    ((2, 4), [1.0, 1.0])
    >>> service.shutdown()
"""

from __future__ import annotations

import mmap
import threading
import uuid
from typing import Any

from gymnasium import spaces

from openenv_gym.errors import InvalidActionError, InvalidRequestError, error_to_wire
from openenv_gym.protocol.slices import (
    INFO_TYPES,
    RESET,
    SKIP,
    STEP_AUTORESET,
    STEP_THEN_RESET,
    SliceLayout,
    valid_rows,
)
from openenv_gym.server.sessions import Session

__all__ = ["VectorSlice"]

#: Most envs one slice may hold (a worker's session limit applies too).
MAX_SLICE = 4096


class VectorSlice:
    """``n`` sessions of one server, stepped together; columns in ``buffer`` or local memory.

    Args:
        service: The server's :class:`~openenv_gym.server.service.EnvService`.
        n: Envs in the slice.
        buffer: The shared buffer mapped from the trainer's memfd, or None to keep the
            columns in local memory and carry them inline in the messages (TCP).
    """

    def __init__(self, service: Any, n: int, buffer: mmap.mmap | None = None) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_SLICE:
            raise InvalidRequestError(f"a slice holds 1..{MAX_SLICE} envs, got n={n!r}")
        self.id = uuid.uuid4().hex
        self.sessions: list[Session] = []
        try:
            for _ in range(n):
                self.sessions.append(service.sessions.create())
        except BaseException:
            for session in self.sessions:
                service.sessions.close(session.id)
            raise
        env = self.sessions[0].env
        info_types = service.spec().get("info_types") or {}
        self.layout = SliceLayout(env.observation_space, env.action_space, n, info_types)
        self.shared = buffer is not None
        self._buffer = buffer if buffer is not None else bytearray(self.layout.size)
        #: The columns (numpy views over the buffer).
        self.columns = self.layout.views(self._buffer)
        #: (key, the Python type its value must have, its column) of each declared info.
        self._info = [(key, INFO_TYPES[info_types[key]][0], column)
                      for key, column in self.layout.info_views(self.columns).items()]
        self._action_space = env.action_space
        self._bounds = env.enforce_action_bounds
        self._lock = threading.Lock()
        self._closed = False
        space = env.action_space
        #: [start, end) of a Discrete action space, checked on every step.
        self._discrete = (int(space.start), int(space.start + space.n)) if isinstance(space, spaces.Discrete) else None

    def step(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run every env's command.

        Args:
            request: ``seeds``/``options`` for resets, ``actions`` (a list) when actions
                have no column; inline slices also get ``cmd`` and ``action`` here.

        Returns:
            What has no column: ``infos``/``finals``/``errors`` keyed by env index in the
            slice, ``obs`` (a list) when observations have no column, and for inline slices
            the result columns.
        """
        # One step at a time: a trainer interrupted mid-step reconnects and steps again
        # while the interrupted step may still run on its old connection's thread.
        with self._lock:
            if self._closed:
                raise InvalidRequestError(f"slice {self.id} is closed")
            try:
                return self._step(request)
            finally:
                if self._closed:  # closed while this step ran: its buffer is released here
                    self._release_buffer()

    def _step(self, request: dict[str, Any]) -> dict[str, Any]:
        cols = self.columns
        n = self.layout.n
        if not self.shared:
            self._load_inline(request)
        cmd: list[int] = cols["cmd"].tolist()
        seeds = _per_env(request, "seeds", n)
        options = request.get("options")
        # Actions have a column unless they came inline (a flat space's rows in a dtype of
        # their own, such as float64 for a float32 Box: the env gets them as sent).
        from_column = self.layout.flat_action and request.get("actions") is None
        actions = self._actions(cmd) if from_column else _per_env(request, "actions", n)
        obs_col = cols["obs"] if self.layout.flat_obs else None
        obs_list: list[Any] = [None] * n if obs_col is None else []
        rewards, terms, truncs = cols["reward"], cols["terminated"], cols["truncated"]
        info_ok = cols.get("info_ok")
        infos: dict[int, Any] = {}
        finals: dict[int, Any] = {}
        errors: dict[int, Any] = {}
        for j, session in enumerate(self.sessions):
            c = cmd[j]
            if c == SKIP:
                continue
            try:
                if c == RESET:
                    obs, info = session.reset(seeds[j], options)
                    reward, terminated, truncated = 0.0, False, False
                else:
                    action = actions[j]
                    if isinstance(action, InvalidActionError):
                        raise action
                    obs, reward, terminated, truncated, info = session.step(
                        action, parsed=from_column)
                    if c == STEP_THEN_RESET or (c == STEP_AUTORESET and (terminated or truncated)):
                        finals[j] = (obs, info)
                        obs, info = session.reset()
                if obs_col is not None:
                    obs_col[j] = obs
                else:
                    obs_list[j] = obs
            except Exception as exc:  # one env's error is that env's; the others step on
                errors[j] = error_to_wire(exc)
                continue
            rewards[j], terms[j], truncs[j] = reward, terminated, truncated
            if info_ok is not None:
                info_ok[j] = in_columns = self._write_info(j, info)
                if in_columns:
                    continue
            if info:
                infos[j] = info
        reply: dict[str, Any] = {}
        if infos:
            reply["infos"] = infos
        if finals:
            reply["finals"] = finals
        if errors:
            reply["errors"] = errors
        if obs_col is None:
            reply["obs"] = obs_list
        if not self.shared:
            reply["columns"] = {k: v for k, v in cols.items() if k not in ("cmd", "action")}
        return reply

    def _write_info(self, j: int, info: Any) -> bool:
        """Write env ``j``'s info into the info columns if it is exactly the declared keys
        with values of the declared types; whether it was."""
        if type(info) is not dict or len(info) != len(self._info):
            return False
        for key, kind, _ in self._info:
            if type(info.get(key)) is not kind:  # exact: a bool is no int here, nor np.int64
                return False
        try:
            for key, _, column in self._info:
                column[j] = info[key]
        except OverflowError:  # an int beyond int64 travels inline
            return False
        return True

    def _load_inline(self, request: dict[str, Any]) -> None:
        for name in ("cmd", "action"):
            if name in self.columns and name in request:
                value = request[name]
                try:
                    self.columns[name][...] = value
                except (TypeError, ValueError) as exc:
                    raise InvalidRequestError(f"slice_step needs {name!r} as an array of shape "
                                              f"{self.columns[name].shape}: {exc}") from None

    def _actions(self, cmd: list[int]) -> list[Any]:
        """Each env's action from the column; an invalid one is replaced by its error."""
        column = self.columns["action"]
        space = self._action_space
        if self._discrete is not None:
            # Numpy scalars of the space's dtype, as Gymnasium's vector envs hand each env its
            # action (an env may call ``action.item()``); the range check runs on Python ints.
            values: list[Any] = list(column)
            start, end = self._discrete
            bad = [j for j, (c, v) in enumerate(zip(cmd, column.tolist())) if c < RESET and not start <= v < end]
        else:
            # Rows copied out of the buffer: the env may keep them past this step.
            values = [row.copy() for row in column]
            ok = valid_rows(space, column, self._bounds)
            bad = [j for j, c in enumerate(cmd) if c < RESET and not ok[j]]
        for j in bad:
            values[j] = InvalidActionError(f"action {column[j].tolist()!r} is not in the action space {space}")
        return values

    def close(self, service: Any) -> None:
        """Close the slice's sessions."""
        for session in self.sessions:
            try:
                service.sessions.close(session.id)
            except Exception:  # already closed or expired: nothing left to do
                pass
        self._closed = True
        # A step in flight (its env's step may take a minute) still writes into the columns:
        # unmapping the buffer under it would crash the worker (numpy views do not pin an
        # mmap). That step releases it when it ends.
        if self._lock.acquire(blocking=False):
            try:
                self._release_buffer()
            finally:
                self._lock.release()

    def _release_buffer(self) -> None:
        if isinstance(self._buffer, mmap.mmap):
            self.columns = {}
            try:
                self._buffer.close()
            except BufferError:  # a view is still held somewhere; the GC unmaps it later
                pass


def _per_env(request: dict[str, Any], key: str, n: int) -> list[Any]:
    values = request.get(key)
    if values is None:
        return [None] * n
    if not isinstance(values, list) or len(values) != n:
        raise InvalidRequestError(f"slice_step needs {key!r} as a list of {n} values (one per env)")
    return values
