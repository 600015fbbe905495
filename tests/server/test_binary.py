"""The binary server: what its clients see when it closes."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest

from openenv_gym.client.transport import BinaryClient
from openenv_gym.envs.echo.env import EchoEnv
from openenv_gym.errors import EnvServerError, WorkerConnectionError, WorkerCrashedError
from openenv_gym.protocol.sockets import parse_address
from openenv_gym.server.binary import BinaryServer
from openenv_gym.server.service import EnvService
from tests.conftest import ServedEnv


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


def test_a_burst_of_connections_queues_while_the_server_cannot_accept() -> None:
    # A vector env's or an EnvPool's sessions connect at once. With socketserver's default
    # backlog of 5, the connections past it were dropped until the server accepted: each
    # waited a SYN retransmit (1 s), and here, with the server stopped, never got in.
    server = ServedEnv("echo", "--max-sessions", "40")
    _, (host, port) = parse_address(server.binary)
    socks: list[socket.socket] = []
    try:
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            for _ in range(32):
                socks.append(socket.create_connection((host, port), timeout=5.0))
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
            for sock in socks:
                sock.close()
        client = BinaryClient(server.binary, 5.0)
        try:
            assert "env" in client.request({"op": "health"})
        finally:
            client.drop()
    finally:
        server.stop()


def test_a_reset_whose_reply_cannot_be_sent_leaves_no_session_behind() -> None:
    # As over HTTP: the session was made before its reply failed to encode, and stayed,
    # holding a max_sessions slot its client never learnt the id of.
    from tests.server.test_http_encoding import OpaqueObservationEnv

    service = EnvService(OpaqueObservationEnv, env_name="test", max_sessions=2, idle_timeout=None)
    server = BinaryServer(service, "tcp://127.0.0.1:0")
    client = BinaryClient(server.address, 5.0)
    try:
        for _ in range(3):  # more than max_sessions: none may stay behind to refuse the next
            with pytest.raises(EnvServerError, match="cannot send"):
                client.request({"op": "reset"})
        assert len(service.sessions) == 0
    finally:
        client.drop()
        server.close()
        service.shutdown()


class _LateFrozensetKeyEnv(EchoEnv):
    """Echo whose steps after the first (which the server checks) put a frozenset key in info."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self._late = getattr(self, "_late", 0) + 1
        if self._late > 1:
            info = {**info, "legal": {frozenset({1, 2}): True}}
        return obs, reward, terminated, truncated, info


def test_a_frozenset_key_in_a_later_info_is_the_envs_named_error_and_the_connection_goes_on() -> None:
    # It encoded, and the client's decode of the whole reply failed (a ProtocolError, which a
    # vector env's pool takes for a broken worker): now the env's TypeError, named.
    service = EnvService(_LateFrozensetKeyEnv, env_name="test", idle_timeout=None)
    server = BinaryServer(service, "tcp://127.0.0.1:0")
    client = BinaryClient(server.address, 5.0)
    try:
        sid = client.request({"op": "reset"})["sid"]
        client.request({"op": "step", "sid": sid, "action": {"message": "a"}})
        with pytest.raises(EnvServerError, match=r"info'\]\['legal'\] with a key frozenset") as caught:
            client.request({"op": "step", "sid": sid, "action": {"message": "b"}})
        assert isinstance(caught.value, TypeError)
        assert "env" in client.request({"op": "health"})
    finally:
        client.drop()
        server.close()
        service.shutdown()
