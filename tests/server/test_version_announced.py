"""A worker says which openenv-gym it runs, in its ``spec`` (beside the protocol number) and in
``/health``: with a server of another protocol attached (``base_url``, a pool started before an
upgrade), the user can see which side runs which version."""

from __future__ import annotations

import requests

import openenv_gym
from openenv_gym.client.transport import BinaryClient
from openenv_gym.protocol import ops
from openenv_gym.protocol.wire import PROTOCOL_VERSION


def test_spec_and_health_name_the_package_version(served_echo) -> None:
    client = BinaryClient(served_echo.binary, 30.0)
    try:
        spec = client.request(ops.spec())["spec"]
        assert (spec["protocol"], spec["version"]) == (PROTOCOL_VERSION, openenv_gym.__version__)
        assert client.request({"op": "health"})["version"] == openenv_gym.__version__
    finally:
        client.close()
    health = requests.get(served_echo.http + "/health", timeout=30).json()
    assert health["version"] == openenv_gym.__version__
