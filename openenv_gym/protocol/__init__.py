"""The wire protocol shared by env servers and clients: msgpack frames and socket helpers,
the requests clients send (:mod:`~openenv_gym.protocol.ops`), the shared-memory slice
layout of the vector step (:mod:`~openenv_gym.protocol.slices`), and the bell a vector env's
workers sleep on between steps (:mod:`~openenv_gym.protocol.bell`)."""

from openenv_gym.protocol.sockets import connect, parse_address, read_message, write_message
from openenv_gym.protocol.wire import MAX_FRAME, decode, encode

__all__ = ["MAX_FRAME", "connect", "decode", "encode", "parse_address", "read_message", "write_message"]
