"""Git-v0 on a machine without the git program (a slim image, a minimal CI runner).

It said nothing until the first reset, which failed with the setup script's
``git: command not found`` (exit 127), while ``doctor`` and ``list`` reported it runnable on
the process provider: the catalog listed the env's Python modules but not the program it runs.
"""

from __future__ import annotations

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.errors import ProviderUnavailableError


@pytest.fixture
def no_git(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no git (nor anything else)


def test_making_the_env_names_the_missing_program(no_git) -> None:
    from openenv_gym.server.main import build_service

    with pytest.raises(ProviderUnavailableError, match="cannot make env 'git'.*git.*apt-get install git"):
        build_service("git")


def test_list_and_doctor_do_not_offer_the_process_provider(no_git) -> None:
    from openenv_gym.cli.doctor import check_envs
    from openenv_gym.cli.envs import runnable_providers

    assert "process" not in runnable_providers(get_env_info("git"))
    [row] = [c for c in check_envs() if c.area == "env git"]
    # "docker (process/ray need git)" where an engine answers, else "no provider can run it".
    assert ("need git" in row.detail or "missing git" in row.detail), row.detail
    assert "apt-get install git" in row.fix, row.fix


def test_with_git_on_the_path_nothing_changes() -> None:
    from openenv_gym.cli.envs import runnable_providers

    assert get_env_info("git").programs == ("git",)
    assert "process" in runnable_providers(get_env_info("git"))
