"""The trainer side of a slice: one worker's envs of a vector env, and their columns.

A :class:`RemoteSlice` opens a :class:`~openenv_gym.server.slices.VectorSlice` on a worker
and keeps its columns (:mod:`openenv_gym.protocol.slices`): in a sealed shared-memory
buffer handed to the worker when it is on this host (Unix socket), so a step sends a
constant 59-byte request and reads a reply that is empty unless an env has info to
report; or in local memory, sent and received inline, for workers reached over TCP.

Example:
    >>> from gymnasium import spaces
    >>> from openenv_gym.client.transport import BinaryClient
    >>> from openenv_gym.protocol.slices import RESET
    >>> from openenv_gym.providers import get_provider
    >>> provider = get_provider("process")
    >>> [worker] = provider.start("gym", 1, {"env_id": "CartPole-v1"})
    >>> piece = RemoteSlice(BinaryClient(worker.address), spaces.Box(-5, 5, (4,)), spaces.Discrete(2), 2)
    >>> piece.columns["cmd"][:] = RESET
    >>> piece.send({"seeds": [0, 1]}); _ = piece.receive()
    >>> piece.columns["obs"].shape
    (2, 4)
    >>> provider.stop_all([worker])
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from gymnasium import spaces

from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import ProtocolError
from openenv_gym.protocol import ops
from openenv_gym.protocol.bell import Bell
from openenv_gym.protocol.slices import PLAIN_REPLY, SliceLayout, create_shared
from openenv_gym.protocol.wire import encode

__all__ = ["RemoteSlice", "shares"]


def shares(client: BinaryClient, shared: bool | None = None) -> bool:
    """Whether a slice on ``client``'s worker keeps its columns in shared memory: as
    ``shared`` says, or (None) when the worker is on this host (reached through a Unix socket).

    Example:
        >>> shares(BinaryClient("tcp://127.0.0.1:1")), shares(BinaryClient("unix:///tmp/w"))
        (False, True)
    """
    return client.address.startswith("unix://") if shared is None else shared


class RemoteSlice:
    """``n`` envs on one worker, stepped together through columns.

    Args:
        client: The connection to the worker.
        observation_space: The single env's observation space.
        action_space: The single env's action space.
        n: Envs in the slice (the worker starts a session for each).
        shared: Put the columns in shared memory (None: when the worker is reached
            through a Unix socket, i.e. on this host).
        info_types: The env's declared infos (its ``spec``'s ``info_types``), which get columns.
        bound: The worker ends the slice when this connection closes (a forked child's,
            which may exit without ``close()``).
        bell: The pool's bell (:mod:`~openenv_gym.protocol.bell`), handed to the worker with
            the shared buffer: the worker sleeps on it between requests, and ``client`` rings
            it from now on. Give it only where the slice :func:`shares` (else it goes unused).
    """

    def __init__(self, client: BinaryClient, observation_space: spaces.Space,
                 action_space: spaces.Space, n: int, shared: bool | None = None,
                 info_types: dict[str, str] | None = None, bound: bool = False,
                 bell: Bell | None = None) -> None:
        self.client = client
        self.layout = SliceLayout(observation_space, action_space, n, info_types)
        self.shared = shares(client, shared)
        if self.shared:
            fd, self._buffer = create_shared(self.layout.size)
            fds = (fd,) if bell is None else (fd, bell.fileno())
            if bell is not None:
                client.bell = bell  # before the request: the worker may listen even if it fails
            try:
                reply = client.request(ops.slice_open(n, self.layout.size, bound, bell is not None),
                                       fds=fds)
            finally:
                os.close(fd)  # the worker holds its own copy now
        else:
            self._buffer = bytearray(self.layout.size)
            reply = client.request(ops.slice_open(n, bound=bound))
        if reply.get("size") != self.layout.size:
            raise ProtocolError(f"slice layout mismatch with the worker at {client.address}: "
                                f"{reply.get('size')} bytes there, {self.layout.size} here")
        #: The slice's id on the worker.
        self.id: str = reply["slice"]
        #: The session id of each env in the slice.
        self.sids: list[str] = list(reply["sids"])
        #: The columns (numpy views of the buffer): write ``cmd``/``action``, read the rest.
        self.columns: dict[str, np.ndarray] = self.layout.views(self._buffer)
        #: The declared infos' columns (a subset of :attr:`columns`), by info key.
        self.info_columns: dict[str, np.ndarray] = self.layout.info_views(self.columns)
        #: Where the owner copies each result column to, as (destination, column) pairs
        #: (:meth:`RemoteVectorEnv._take_slice` makes them once; None: not yet).
        self.targets: list[tuple[np.ndarray, np.ndarray]] | None = None
        #: The one command the ``cmd`` column holds for every env, when the trainer wrote one
        #: (None: not known, e.g. a fresh slice), so a run of plain steps writes it once.
        self.uniform_cmd: int | None = None
        self._step_frame = encode(ops.slice_step(self.id))
        # Whether a reply may say nothing but "ok" (results in shared columns), and be taken
        # as the frame it then is, without decoding it.
        self._plain_reply = self.shared and self.layout.flat_obs
        #: The connection a bound slice lives on: the worker ends the slice when it closes.
        self._connection = client.connection if bound else None

    def write_commands(self, commands: np.ndarray | int, uniform: int | None = None) -> None:
        """Write this slice's envs' ``commands`` into its ``cmd`` column, unless ``uniform``
        (the one command every env gets, if one) is what the column holds already.

        Args:
            commands: One command per env of the slice, or one for all.
            uniform: The command ``commands`` holds for every env, or None.
        """
        if uniform is None or self.uniform_cmd != uniform:
            self.uniform_cmd = None  # unknown until the write is done (an interrupt may cut it)
            self.columns["cmd"][:] = commands
            self.uniform_cmd = uniform

    def ended(self) -> bool:
        """Whether the worker ended this (bound) slice: its connection was dropped since it
        opened (a call timed out or was interrupted). An owner's slice outlives its connection."""
        return self._connection is not None and self.client.connection is not self._connection

    def frame(self, extra: dict[str, Any] | None = None) -> bytes:
        """The ``slice_step`` frame asking the worker to run the commands now in the ``cmd``
        column (encoded, not sent: a value the wire cannot carry is refused here).

        Args:
            extra: What has no column (``seeds``, ``options``, ``actions``).

        Raises:
            InvalidRequestError: A string is not valid UTF-8 (a lone surrogate).
            TypeError: A value of a type the wire does not carry.
        """
        if self.shared and not extra:
            return self._step_frame
        message: dict[str, Any] = ops.slice_step(self.id, **(extra or {}))
        if not self.shared:
            message["cmd"] = self.columns["cmd"]
            if "action" in self.columns:
                message["action"] = self.columns["action"]
        return encode(message)

    def send(self, extra: dict[str, Any] | None = None, timeout: float | None = None) -> None:
        """Ask the worker to run the commands now in the ``cmd`` column.

        Args:
            extra: What has no column (``seeds``, ``options``, ``actions``).
            timeout: Seconds the worker may take.
        """
        self.client.send_frame(self.frame(extra), timeout)

    def receive(self) -> dict[str, Any]:
        """The reply to :meth:`send`; inline result columns are copied into :attr:`columns`.

        Raises:
            OpenEnvError: As :meth:`BinaryClient.receive`.
        """
        if self._plain_reply and self.client.receive_if(PLAIN_REPLY):
            return {}  # the usual step: everything is in the columns
        reply = self.client.receive()
        self._check(reply)
        inline = reply.pop("columns", None)
        if not self.shared:
            if not isinstance(inline, dict):
                raise ProtocolError(f"slice reply from {self.client.address} lacks its columns")
            for name, value in inline.items():
                if name in self.columns and name not in ("cmd", "action"):
                    try:
                        self.columns[name][...] = value
                    except (TypeError, ValueError) as exc:
                        raise ProtocolError(f"malformed slice reply from {self.client.address}: "
                                            f"column {name!r}: {exc}") from None
        return reply

    def _check(self, reply: dict[str, Any]) -> None:
        """Refuse a reply whose shape does not fit the slice (a broken or hostile worker)."""
        if not reply and self.layout.flat_obs:
            return  # the usual step: everything is in the columns
        n = self.layout.n
        for key in ("infos", "finals", "errors"):
            part = reply.get(key)
            if part is not None and not (type(part) is dict and _indices(part, n)):
                raise ProtocolError(f"malformed slice reply from {self.client.address}: {key!r}")
        infos = reply.get("infos")
        if infos:
            for info in infos.values():
                if type(info) is not dict:
                    raise ProtocolError(f"malformed slice reply from {self.client.address}: 'infos'")
        finals = reply.get("finals")
        if finals and not all(isinstance(v, (list, tuple)) and len(v) == 2 for v in finals.values()):
            raise ProtocolError(f"malformed slice reply from {self.client.address}: 'finals'")
        if not self.layout.flat_obs:
            obs = reply.get("obs")
            if not isinstance(obs, list) or len(obs) != n:
                raise ProtocolError(f"malformed slice reply from {self.client.address}: 'obs'")

    def release(self) -> None:
        """Drop the trainer's mapping (the worker keeps its own until it closes the slice)."""
        self.columns, self.info_columns, self.targets = {}, {}, None
        buffer, self._buffer = self._buffer, None
        if buffer is not None and hasattr(buffer, "close"):
            try:
                buffer.close()
            except BufferError:  # a caller still holds a view; the GC unmaps it later
                pass


def _indices(part: dict[Any, Any], n: int) -> bool:
    """Whether every key of ``part`` is an env index of the slice (an int in ``[0, n)``)."""
    for j in part:
        if type(j) is not int or not 0 <= j < n:  # bool and float keys are refused too
            return False
    return True
