"""A base-image build interrupted with Ctrl-C (a notebook's interrupt, which reaches the trainer
only) stops the whole build and lets it clean up. Only its `bash` was killed: mmdebstrap and
`docker import` ran on for ~40 s, orphaned, and tagged a base behind the user's back; a run
started meanwhile built a second one beside it (a dangling copy of ~270 MB).

A real engine, with a stand-in build script whose pipeline cleans up on SIGINT (as mmdebstrap
removes its ~200 MB root folder), and a base reference that is never found, whose pull is
refused on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.providers.base_build import stand_in_base_build

pytestmark = pytest.mark.docker

_SCRIPT = textwrap.dedent("""\
    #!/usr/bin/env bash
    # token: {token}
    ( trap 'touch "{shared}/cleaned"; exit 130' INT
      echo $BASHPID >> "{shared}/pids"
      while :; do sleep 0.1; done ) | cat
""")

_TRAINER = textwrap.dedent("""
    import docker
    from openenv_gym.providers import _docker_images as images

    images.ensure_base(docker.from_env(), lambda line: print(line, flush=True))
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_interrupted_base_build_stops_its_whole_pipeline(tmp_path: Path) -> None:
    env = stand_in_base_build(tmp_path, _SCRIPT)
    trainer = subprocess.Popen([sys.executable, "-c", _TRAINER], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids = tmp_path / "pids"
    try:
        deadline = time.monotonic() + 60
        while not pids.exists() and time.monotonic() < deadline and trainer.poll() is None:
            time.sleep(0.05)
        assert pids.exists(), trainer.communicate()
        trainer.send_signal(signal.SIGINT)  # the trainer's only, as a notebook's interrupt
        _, err = trainer.communicate(timeout=60)
        assert "KeyboardInterrupt" in err
        [builder] = map(int, pids.read_text().split())
        deadline = time.monotonic() + 15
        while _alive(builder) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(builder)  # was: ran on, orphaned
        assert (tmp_path / "cleaned").exists()  # it got a signal it can clean up on
    finally:
        trainer.kill()
        trainer.wait()
        for pid in map(int, pids.read_text().split()) if pids.exists() else []:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
