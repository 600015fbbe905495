"""A Docker engine lost in the middle of an image build (stopped, crashed) is a
ProviderUnavailableError that says what to do. urllib3's bare ``ProtocolError``
("Connection broken: IncompleteRead") came out of ``gym.make`` and ``openenv-gym build``.

A real engine, reached through a Unix-socket relay in the test that cuts every connection
once the build runs a step that takes a while (the engine then sees its client leave and
cancels the build): the trainer's side of an engine that died, without stopping the
engine every other test uses."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import threading
from pathlib import Path

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _docker_images as images
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

docker = pytest.importorskip("docker")


class Relay:
    """A Unix socket at ``path`` that relays each connection to the engine's socket, until
    :meth:`cut` closes every connection and the listener."""

    def __init__(self, path: str, engine: str) -> None:
        self.engine = engine
        self.sockets: list[socket.socket] = []
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(path)
        self.listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.engine)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        self.listener.close()
        for s in list(self.sockets):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def test_an_engine_lost_mid_build_is_a_provider_unavailable_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_docker()
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        pytest.skip(f"the relay needs the engine on a Unix socket, not {host}")
    containers = tmp_path / "containers"
    containers.mkdir()
    shutil.copy2(images.containers_dir() / "build-base.sh", containers)  # the same base tag
    dockerfile = (images.containers_dir() / "Dockerfile").read_text()
    # A step of its own (no cached layer) that runs until the relay cuts the connection.
    slow = f"RUN sleep 60 # {secrets.token_hex(8)}\n"
    (containers / "Dockerfile").write_text(
        dockerfile.replace("FROM ${BASE_IMAGE}\n", "FROM ${BASE_IMAGE}\n" + slow, 1))
    monkeypatch.setenv("OPENENV_GYM_CONTAINERS_DIR", str(containers))

    relay = Relay(str(tmp_path / "engine.sock"), host[len("unix://"):])
    client = docker.DockerClient(base_url=f"unix://{tmp_path / 'engine.sock'}", timeout=120)

    def progress(line: str) -> None:
        if "RUN sleep 60" in line:
            relay.cut()

    try:
        with pytest.raises(ProviderUnavailableError,
                           match="the Docker engine failed while building the image of env 'echo'"):
            images.build_image(client, get_env_info("echo"), progress=progress)
    finally:
        relay.cut()
        client.close()
