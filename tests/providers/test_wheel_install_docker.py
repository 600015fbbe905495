"""openenv_gym installed from a wheel (no source checkout) with the docker SDK and an engine.

Images are built from a source checkout (the Dockerfile in ``containers/``); a wheel install
has none. ``provider="auto"`` (the default) must then run workers on the process provider
instead of picking docker and failing, and ``provider="docker"`` must name the real problem
before it pulls or builds a base image it could not use.
"""

from __future__ import annotations

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _docker_images, provider_class, resolve_provider_name


@pytest.fixture
def wheel_install(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """An engine answers, but openenv_gym has no containers/ folder (as from a wheel)."""
    monkeypatch.setenv("OPENENV_GYM_CONTAINERS_DIR", str(tmp_path / "no-containers"))
    monkeypatch.setattr(provider_class("docker"), "available", classmethod(lambda cls: (True, "")))


def test_auto_runs_process_workers_when_no_image_can_be_built(wheel_install) -> None:
    assert resolve_provider_name("auto") == "process"


def test_auto_warns_for_untrusted_envs_with_the_reason(wheel_install) -> None:
    with pytest.warns(RuntimeWarning, match="no Dockerfile at"):
        assert resolve_provider_name("auto", untrusted=True) == "process"


class _NoCalls:
    """A Docker client that fails the test on any use (no pull, no build, no lookup)."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the Docker client was used ({name}) though nothing can be built")


def test_a_build_names_the_missing_checkout_before_touching_the_engine(wheel_install) -> None:
    with pytest.raises(ProviderUnavailableError, match="no Dockerfile at .*source checkout"):
        _docker_images.build_image(_NoCalls(), get_env_info("echo"))
