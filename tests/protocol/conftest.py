"""Fixtures of the protocol tests."""

from __future__ import annotations

import socket
from typing import Iterator

import pytest


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected pair of Unix stream sockets: write on the first, read on the second."""
    a, b = socket.socketpair(socket.AF_UNIX)
    yield a, b
    a.close()
    b.close()
