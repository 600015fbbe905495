"""The command the no-terminal message suggests (``vim -es -c ... -c wq FILE``) edits the file
as its ``sed -i s/old/new/ FILE`` neighbour does. A bare ``s/old/new/`` in ex mode runs on the
last line only: with the match on another line vim exited 1 and wrote nothing, so an agent that
followed the hint saw its edit silently not happen."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from openenv_gym.envs._exec import VIM_NO_TERMINAL, minimal_environ

pytestmark = pytest.mark.skipif(shutil.which("vim") is None, reason="no vim on this machine")


def _suggested(old: str, new: str, file: Path) -> list[str]:
    [command] = re.findall(r"vim -es -c \S+ -c wq FILE", VIM_NO_TERMINAL)
    command = command.replace("old", old).replace("new", new).replace("FILE", str(file))
    return shlex.split(command)


def test_the_suggested_vim_command_edits_every_matching_line(tmp_path: Path) -> None:
    file = tmp_path / "f.txt"
    file.write_text("alpha\nbeta\nalpha gamma\nlast\n")
    proc = subprocess.run(_suggested("alpha", "omega", file), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=30,
                          env=minimal_environ(HOME=str(tmp_path), PATH="/usr/bin:/bin"))
    assert proc.returncode == 0, proc
    # as `sed -i s/alpha/omega/` would leave it
    assert file.read_text() == "omega\nbeta\nomega gamma\nlast\n"


def test_the_message_avoids_what_vims_bang_expands() -> None:
    assert not set("%#!'") & set(VIM_NO_TERMINAL)
