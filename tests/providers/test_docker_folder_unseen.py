"""A Docker engine that does not see the trainer's files (a remote ``DOCKER_HOST``, Docker's
socket mounted into the dev container the trainer runs in) resolves the worker's bind-mounted
socket folder in its own file system, makes an empty folder of that name there, and the server
failed in it on a bare ``PermissionError`` traceback: the error must say what is wrong and how
to fix it, and leave no container."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from openenv_gym.errors import ProviderUnavailableError
from tests.conftest import require_docker

pytestmark = pytest.mark.docker


def test_an_engine_that_does_not_see_the_socket_folder_is_named_with_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    require_docker()
    from docker.models.containers import ContainerCollection

    from openenv_gym.providers import _docker_owner as owner
    from openenv_gym.providers.docker import DockerProvider

    provider = DockerProvider()
    create = ContainerCollection.create
    made: list[str] = []

    def create_elsewhere(self: ContainerCollection, image: str, command: Any = None,
                         **kwargs: Any) -> Any:
        # What the engine finds at the bind mount's path when its file system is not ours: no
        # folder (it then makes an empty one, root's), not the one the worker made.
        [folder] = kwargs["volumes"]
        shutil.rmtree(folder)
        made.append(kwargs["name"])
        return create(self, image, command, **kwargs)

    monkeypatch.setattr(ContainerCollection, "create", create_elsewhere)
    with pytest.raises(ProviderUnavailableError) as caught:
        provider.start("echo")
    monkeypatch.undo()
    message = str(caught.value)
    assert "does not see this machine's folder" in message
    assert "TMPDIR" in message and "provider='process'" in message
    assert made
    left = provider.client.containers.list(all=True, ignore_removed=True,
                                           filters=owner.project_filter(**{owner.LABEL_OWNER_PID: str(os.getpid())}))
    assert [c.name for c in left if c.name in made] == []
    provider.client.close()
