"""Shared fixtures: real workers on every provider, and the Docker gate.

Docker tests run against a real engine. Without one they skip with a reason, unless
``OPENENV_GYM_REQUIRE_DOCKER=1`` (set by ``.ci/run``), where they fail instead.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_DOCKER = os.environ.get("OPENENV_GYM_REQUIRE_DOCKER") == "1"


def docker_unavailable_reason() -> str | None:
    """Why Docker tests cannot run here, or None when an engine is reachable."""
    try:
        from openenv_gym.providers import provider_class

        ok, reason = provider_class("docker").available()
    except Exception as exc:  # the docker extra may be missing entirely
        return f"docker provider unavailable: {exc}"
    return None if ok else reason


def require_docker() -> None:
    """Skip (or fail under OPENENV_GYM_REQUIRE_DOCKER=1) when no Docker engine is reachable."""
    reason = docker_unavailable_reason()
    if reason is None:
        return
    message = (f"no Docker engine: {reason}. Start one (`dockerd &`) to run Docker tests; "
               "CI sets OPENENV_GYM_REQUIRE_DOCKER=1 to make this a failure.")
    if REQUIRE_DOCKER:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def provider(request: pytest.FixtureRequest) -> str:
    """Each provider name in turn; the docker one only where an engine is reachable."""
    if request.param == "docker":
        require_docker()
    return request.param
