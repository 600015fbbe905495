"""Git-v0's message editor (``GIT_EDITOR``) says "use -m" whenever git got no message, as git
judges it, and never when it got one.

It used to decide by its own pattern (a line that is neither blank nor starts with ``#``): with
``git commit -v`` (or ``commit.verbose``) the diff below the scissors line counted as a
message, and with a ``core.commentChar`` of the repository's own (``;``) the comment lines
did, so the agent saw git's "Aborting commit due to empty commit message." without the hint.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from openenv_gym.envs._exec import minimal_environ
from openenv_gym.envs.git.workspace import GIT_EDITOR

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="no git on this machine")

HINT = "hint: there is no editor here"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Agent\n\temail = agent@example.com\n"
                                     "[init]\n\tdefaultBranch = main\n")
    repo = tmp_path / "repo"
    _git(repo.parent, home, "init -q repo")
    (repo / "f").write_text("1\n")
    _git(repo, home, "add f && git commit -qm c1 && echo 2 >> f && git add f")
    return repo


def _git(cwd: Path, home: Path, command: str) -> subprocess.CompletedProcess:
    env = minimal_environ(HOME=str(home), PATH="/usr/local/bin:/usr/bin:/bin", GIT_CONFIG_NOSYSTEM="1",
                          GIT_EDITOR=GIT_EDITOR, GIT_TERMINAL_PROMPT="0")
    return subprocess.run(["bash", "-c", "git " + command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)


def _run(repo: Path, command: str) -> tuple[str, int]:
    proc = _git(repo, repo.parent / "home", command)
    return proc.stdout + proc.stderr, proc.returncode


@pytest.mark.parametrize("command", [
    "commit",
    "commit -v",
    "-c commit.verbose=true commit",
    "-c core.commentChar=';' commit",
    "-c core.commentChar=';' commit -v",
    "-c core.commentChar=auto commit -v",
    "-c core.commentChar=';' tag -a v1",
])
def test_no_message_gets_the_hint(repo: Path, command: str) -> None:
    out, code = _run(repo, command)
    assert code != 0 and ("Aborting commit due to empty commit message" in out or "no tag message" in out), out
    assert HINT in out, f"git {command}: no hint beside git's abort message: {out!r}"


@pytest.mark.parametrize("command", [
    "commit --amend -v",
    "-c core.commentChar=';' commit --amend -v",
    "-c core.commentChar=auto commit --amend -v",
])
def test_a_kept_message_gets_no_hint(repo: Path, command: str) -> None:
    out, code = _run(repo, command + " && git log -1 --format=%s")
    assert code == 0 and out.rstrip().endswith("c1") and HINT not in out, out


def test_a_message_that_looks_like_a_comment_only_under_the_default_is_kept(repo: Path) -> None:
    # With commentChar auto git picks a character no line of the message starts with (';' here).
    out, code = _run(repo, "commit -q --amend -m '#1 fix' && git -c core.commentChar=auto commit --amend "
                           "&& git log -1 --format=%s")
    assert code == 0 and out.rstrip().endswith("#1 fix") and HINT not in out, out
