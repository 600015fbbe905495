"""A confined Coding-v0 or Git-v0 step must not change the metadata of a file outside its folder.

Landlock covers opening, creating, renaming and removing files, not a file's metadata: a
confined child of a root worker ran ``chmod``, ``chown``, ``utime`` and ``setxattr`` on any
file root owns (``chmod 0777 /etc/shadow``, ``chmod 0 /usr/bin/python3``, a set-uid bit on a
system program), and a child of any user on every file of that user. Where the worker may
mount (root), each child now sees every mount read-only but its own folder, as Docker's
read-only root does: those calls fail with ``EROFS``, while ``chmod +x`` in its folder works.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import textwrap
from typing import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._confine import abi as landlock_abi
from openenv_gym.providers._tmpfs import support as mount_support
from tests.security.helpers import key_values, one_coding_step, record

pytestmark = pytest.mark.skipif(landlock_abi() < 1 or not mount_support()[0],
                                reason="needs Landlock and a worker that may mount (root with CAP_SYS_ADMIN)")

_MODE, _MTIME = 0o600, 1_577_836_800  # what the canary has, and must keep


@pytest.fixture()
def canary() -> Iterator[str]:
    """A file of the trainer's, outside every sandbox (in the home: not the worker's tmpfs)."""
    folder = tempfile.mkdtemp(prefix="openenv-gym-metadata-", dir=os.path.expanduser("~"))
    path = os.path.join(folder, "canary")
    with open(path, "w") as f:
        f.write("the trainer's file\n")
    os.chmod(path, _MODE)
    os.utime(path, (_MTIME, _MTIME))
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def _unchanged(path: str) -> None:
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == _MODE, oct(st.st_mode)
    assert int(st.st_mtime) == _MTIME, st.st_mtime
    assert os.listxattr(path) == [], os.listxattr(path)


def test_a_coding_step_cannot_change_a_host_files_metadata(canary: str) -> None:
    code = textwrap.dedent(f"""
        import os
        path = {canary!r}
        open("own.sh", "w").write("echo hi")
        for name, call in [("chmod", lambda: os.chmod(path, 0o4777)), ("utime", lambda: os.utime(path, (0, 0))),
                           ("chown", lambda: os.chown(path, -1, os.getgid())),
                           ("setxattr", lambda: os.setxattr(path, "user.pwned", b"1")),
                           ("own_chmod", lambda: os.chmod("own.sh", 0o755))]:
            try:
                call()
                print(name + "=ok")
            except OSError as exc:
                print(name + "=" + str(exc.strerror))
    """)
    obs = one_coding_step(code, step_timeout=10.0)
    got = key_values(obs["stdout"])
    refused = "Read-only file system"
    assert got == {"chmod": refused, "utime": refused, "chown": refused, "setxattr": refused,
                   "own_chmod": "ok"}, obs
    _unchanged(canary)
    record("attacks", "chmod, chown, utime, setxattr of a host file (Landlock does not cover metadata)",
           "refused: every mount but its folder is read-only; chmod in its folder works",
           "; ".join(f"{k}={v}" for k, v in got.items()), "process")


def test_a_git_command_cannot_change_a_host_files_metadata(canary: str) -> None:
    env = gym.make("OpenEnv/Git-v0", provider="process", step_timeout=10.0)
    try:
        env.reset()
        # Its own file keeps the mode it is given, and runs.
        obs, *_ = env.step({"command": f"chmod 4755 {canary}; echo chmod=$?; touch -d 2001-01-01 {canary}; "
                                       "echo touch=$?; echo true > own.sh && chmod +x own.sh && ./own.sh && "
                                       "echo own=$(stat -c %a own.sh)"})
    finally:
        env.close()
    got = key_values(obs["output"])
    assert got == {"chmod": "1", "touch": "1", "own": "755"}, obs
    _unchanged(canary)
    record("attacks", "Git-v0 command: chmod and touch of a host file (Landlock does not cover metadata)",
           "refused: every mount but its folder is read-only; chmod +x in its folder works",
           "; ".join(f"{k}={v}" for k, v in got.items()), "process")
