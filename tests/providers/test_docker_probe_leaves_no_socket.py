"""Probing for a Docker engine that is not there leaves no socket open.

docker-py's connect to a Unix socket does not close its socket when the connect fails: with
``DOCKER_HOST`` naming a socket that does not exist (or that nobody listens on),
``provider="auto"`` left one behind at each probe, a ``ResourceWarning`` at its collection
(an error under ``python -W error`` or a test suite's ``filterwarnings = error``).
"""

from __future__ import annotations

import gc
import socket
import warnings
from pathlib import Path

import pytest

from openenv_gym.providers import resolve_provider_name


def _stale_socket(folder: Path) -> Path:
    """A socket file nobody listens on (an engine killed without cleaning up)."""
    path = folder / "stale.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
    return path


@pytest.mark.parametrize("where", ["missing", "stale"])
def test_auto_without_an_engine_at_docker_host_leaves_no_socket_open(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("docker")
    path = tmp_path / "no-such.sock" if where == "missing" else _stale_socket(tmp_path)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert resolve_provider_name("auto") == "process"
        gc.collect()  # a leaked socket warns when it is collected
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaks == []
