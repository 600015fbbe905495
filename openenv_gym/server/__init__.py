"""The env server: sessions of one env type served over binary frames and HTTP/JSON.

Nothing here is imported by ``import openenv_gym``: the web stack loads only in workers.
"""

from openenv_gym.server.main import build_service, run_server
from openenv_gym.server.service import EnvService

__all__ = ["EnvService", "build_service", "run_server"]
