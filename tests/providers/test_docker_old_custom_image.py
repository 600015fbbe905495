"""A custom image (``provider_options['image']``) whose openenv_gym is older than the trainer's:
its server does not take an argument this version starts workers with. The start then raised a
bare WorkerError carrying argparse's usage text; it names the version mismatch and the fix."""

from __future__ import annotations

import io

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.errors import ProtocolError
from openenv_gym.providers.docker import DockerProvider
from tests.conftest import require_docker

pytestmark = pytest.mark.docker

# An "older" server: argparse knows no --idle-timeout (this version always passes it).
_OLD_SERVER = """\
FROM {base}
USER root
RUN main=$(python -c "import openenv_gym.server.main as m; print(m.__file__)") && \\
    sed -i -e 's/"--idle-timeout"/"--zzz-idle"/' -e 's/args.idle_timeout/args.zzz_idle/g' "$main" && \\
    find / -xdev -name '*.pyc' -path '*openenv_gym/server*' -delete
USER 10001:10001
"""


def test_an_image_of_an_older_openenv_gym_is_named_as_a_version_mismatch() -> None:
    require_docker()
    base = DockerProvider().image_for(get_env_info("echo"))
    provider = DockerProvider()
    image, _ = provider.client.images.build(
        fileobj=io.BytesIO(_OLD_SERVER.format(base=base).encode()), rm=True, pull=False,
        labels={"openenv-gym.test": "old-custom-image"})
    try:
        custom = DockerProvider(image=image.id)
        with pytest.raises(ProtocolError) as caught:
            custom.start("echo")
        text = str(caught.value)
        assert "--idle-timeout" in text and "another openenv-gym version" in text
        assert "provider_options['image']" in text
    finally:
        provider.client.images.remove(image.id, force=True)
        provider.client.close()
