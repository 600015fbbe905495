"""The client side: the binary transport and :class:`RemoteEnv`."""

from openenv_gym.client.env import RemoteEnv
from openenv_gym.client.transport import BinaryClient

__all__ = ["BinaryClient", "RemoteEnv"]
