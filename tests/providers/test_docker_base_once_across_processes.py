"""Two trainers that start on an engine with no base image build the local base once: the
second waits for the first's build, then finds it. Both ran `build-base.sh` side by side (on
a fresh machine: two mmdebstrap runs, twice the download and ~40 s of two cores), and the
first import was left behind untagged (a 267 MB dangling image), its id baked into the
other trainer's env image tag, which no later run found again.

A real engine, with a stand-in build script (an empty image imported as the base tag) and a
base reference that is never found, whose pull is refused on loopback."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.providers.base_build import stand_in_base_build

pytestmark = pytest.mark.docker

# Records each run (and the id it imported), then waits a while (not for good) for the other
# trainer to start one too, as two real builds of ~40 s overlap.
_SCRIPT = textwrap.dedent("""\
    #!/usr/bin/env bash
    # token: {token}
    set -euo pipefail
    echo run >> "{shared}/runs"
    for _ in $(seq 1 60); do [ "$(wc -l < "{shared}/runs")" -ge 2 ] && break; sleep 0.05; done
    tar -cf - -T /dev/null | docker import - "$1" >> "{shared}/ids"
""")

_TRAINER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import docker
    from openenv_gym.providers import _docker_images as images

    shared = Path(sys.argv[1])
    client = docker.from_env()
    (shared / f"ready-{sys.argv[2]}").touch()
    while len(list(shared.glob("ready-*"))) < 2:
        time.sleep(0.01)
    print(images.ensure_base(client)[1])
""")


def test_two_trainers_missing_the_base_image_build_it_once(tmp_path: Path) -> None:
    env = stand_in_base_build(tmp_path, _SCRIPT)
    procs = [subprocess.Popen([sys.executable, "-c", _TRAINER, str(tmp_path), str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()
        ids = (tmp_path / "ids").read_text().split() if (tmp_path / "ids").exists() else []
        if ids:
            subprocess.run(["docker", "rmi", "-f", *ids], capture_output=True)
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert len((tmp_path / "runs").read_text().split()) == 1  # was 2: built side by side
    assert len({out.strip() for out, _ in outs}) == 1  # both use the one base image
