"""The uids the hardening gives worker containers exist in the image the Dockerfile builds:
CONTAINER_UID and WORKER_UIDS are written in Python and again in containers/Dockerfile."""

from __future__ import annotations

import re
from pathlib import Path

from openenv_gym.providers._docker_hardening import CONTAINER_UID, HARDENING, WORKER_UIDS

DOCKERFILE = (Path(__file__).resolve().parents[2] / "containers" / "Dockerfile").read_text()


def test_the_default_user_is_the_images_user() -> None:
    assert f"USER {HARDENING['user']}" in DOCKERFILE
    assert f"openenv:x:{CONTAINER_UID}:{CONTAINER_UID}:" in DOCKERFILE
    assert f"chown {CONTAINER_UID}:{CONTAINER_UID} /workspace" in DOCKERFILE


def test_the_image_has_a_passwd_entry_for_every_worker_uid() -> None:
    loop = re.search(r"for i in \$\(seq 1 (\d+)\); do u=\$\(\((\d+) \+ i\)\)", DOCKERFILE)
    assert loop, "the Dockerfile's loop over worker uids changed shape: update this test"
    assert (int(loop[1]), int(loop[2])) == (WORKER_UIDS, CONTAINER_UID)
