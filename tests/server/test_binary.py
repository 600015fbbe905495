"""The binary server: what its clients see when it closes."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_gym.client.transport import BinaryClient
from openenv_gym.envs.echo.env import EchoEnv
from openenv_gym.errors import WorkerConnectionError, WorkerCrashedError
from openenv_gym.server.binary import BinaryServer
from openenv_gym.server.service import EnvService


@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_closing_the_server_ends_open_connections(tmp_path: Path, kind: str) -> None:
    # A worker going away closes its sessions and slices right after its servers: a request
    # still answered on an open connection would get "no session"/"no slice", an error the
    # client takes for the env's. A closed connection is a worker failure it recovers from.
    service = EnvService(EchoEnv)
    server = BinaryServer(service, f"unix://{tmp_path}/w.sock" if kind == "unix" else "tcp://127.0.0.1:0")
    client = BinaryClient(server.address, 5.0)
    try:
        assert "env" in client.request({"op": "health"})
        server.close()
        with pytest.raises((WorkerCrashedError, WorkerConnectionError)):
            client.request({"op": "health"})
    finally:
        client.drop()
        service.shutdown()
