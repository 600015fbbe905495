"""The wire protocol shared by env servers and clients: msgpack frames and socket helpers."""

from openenv_gym.protocol.sockets import connect, parse_address, read_message, write_message
from openenv_gym.protocol.wire import MAX_FRAME, decode, encode

__all__ = ["MAX_FRAME", "connect", "decode", "encode", "parse_address", "read_message", "write_message"]
