"""Two trainers that miss the same env image at the same moment build it once: the second
waits for the first's build, then finds the image. They built it twice side by side, leaving
a dangling copy of the image's layers behind. No engine needed: the builds are faked, and the
fake engine's images live in a folder both processes see."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("docker")

_TRAINER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import docker.errors
    from openenv_gym.catalog import get_env_info
    from openenv_gym.providers import _docker_images as images

    shared = Path(sys.argv[1])
    mark = lambda tag: shared / ("image-" + tag.replace("/", "_").replace(":", "_"))

    class Image:
        attrs = {"Size": 1}

    class Images:
        def get(self, tag):
            if mark(tag).exists():
                return Image()
            raise docker.errors.ImageNotFound(tag)

    class Client:
        images = Images()

    def fake_build(client, ctx, tag, base, env, no_cache, progress):
        with open(shared / "builds", "a") as f:
            f.write(f"{os.getpid()}\\n")
        # Wait (a while, not for good) for the other trainer to start building too.
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and len((shared / "builds").read_text().split()) < 2:
            time.sleep(0.02)
        mark(tag).touch()

    wheels = shared / "wheels"
    wheels.mkdir(exist_ok=True)
    images.ensure_base = lambda client, progress=None: ("base:qa", "sha256:0")
    images._download_wheels = lambda reqs, progress: wheels
    images._build_self_wheel = lambda src, progress: wheels
    images._docker_build = fake_build
    (shared / f"ready-{os.getpid()}").touch()
    while len(list(shared.glob("ready-*"))) < 2:
        time.sleep(0.01)
    result = images.build_image(Client(), get_env_info("echo"))
    print("built" if result.built else "found")
""")


def test_two_trainers_missing_the_same_image_build_it_once(tmp_path: Path) -> None:
    env = dict(os.environ, OPENENV_GYM_CACHE=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", _TRAINER, str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert sorted(out.strip() for out, _ in outs) == ["built", "found"]
    assert len((tmp_path / "builds").read_text().split()) == 1  # was 2: built side by side
