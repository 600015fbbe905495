"""Git-v0's ``branch`` field where ``.git`` is a file: a linked worktree, a separate git dir."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from openenv_gym.envs.git.env import GitEnv
from openenv_gym.envs.git.models import GitAction


@pytest.fixture(scope="module")
def env() -> Iterator[GitEnv]:
    env = GitEnv(task="create-branch")
    yield env
    env.close()


def _branch(env: GitEnv, command: str, workdir: str = "") -> str:
    obs, *_ = env.step(GitAction(command=command, workdir=workdir))
    assert obs.exit_code == 0, obs.output
    return obs.branch


def test_a_linked_worktree_shows_its_own_branch(env: GitEnv) -> None:
    # Its .git is a file ("gitdir: ../repo/.git/worktrees/wt"): the field was "" there,
    # while `git branch --show-current` said feat.
    env.reset()
    assert _branch(env, "git worktree add -q -b feat ../wt") == "main"
    assert _branch(env, "git branch --show-current", workdir="wt") == "feat"
    assert _branch(env, "true", workdir="repo") == "main"


def test_a_separate_git_dir_shows_its_own_branch_not_the_parents(env: GitEnv) -> None:
    # Its .git file was passed over, and the field named the enclosing repo's branch.
    env.reset()
    assert _branch(env, "git init -q --separate-git-dir=../../sep sub && "
                        "git -C sub symbolic-ref HEAD refs/heads/zzz") == "main"
    assert _branch(env, "git branch --show-current", workdir="repo/sub") == "zzz"


def test_a_head_that_leads_out_of_the_workspace_is_not_read(env: GitEnv, tmp_path: Path) -> None:
    # The worker (not confined) followed the agent's link wherever it led.
    outside = tmp_path / "HEAD"
    outside.write_text("ref: refs/heads/outside-secret\n")
    env.reset()
    assert _branch(env, f"mkdir -p x/.git && ln -s {outside} x/.git/HEAD") == "main"
    assert _branch(env, "true", workdir="repo/x") == ""
    assert _branch(env, f"rm -rf x && printf 'gitdir: {tmp_path}\\n' > .git2 && mkdir y && "
                        "mv .git2 y/.git") == "main"
    assert _branch(env, "true", workdir="repo/y") == ""


def test_a_git_file_that_leads_out_of_the_workspace_is_not_read(env: GitEnv, tmp_path: Path) -> None:
    # The worker read the first line of a .git file wherever its link led, though it read
    # HEAD files only inside the env's folder: here a gitdir line outside names the repo's
    # own folder, and the field showed its branch.
    import os

    env.reset()
    inside = os.path.join(os.path.realpath(env.workspace.work), env.task.repo, ".git")
    outside = tmp_path / "dot-git"
    outside.write_text(f"gitdir: {inside}\n")
    assert _branch(env, f"mkdir z && ln -s {outside} z/.git") == "main"
    assert _branch(env, "true", workdir="repo/z") == ""
    # The same line in a linked .git file inside the workspace is read.
    assert _branch(env, f"printf 'gitdir: {inside}\\n' > ../dot-git && rm z/.git && "
                        "ln -s ../../dot-git z/.git") == "main"
    assert _branch(env, "git symbolic-ref HEAD refs/heads/in", workdir="repo/z") == "in"


def test_a_head_the_worker_cannot_read_gives_no_branch(env: GitEnv, monkeypatch) -> None:
    # Where the worker is not root (the docker provider; the process provider for most
    # users), `chmod 000 .git/HEAD` made the worker's read raise PermissionError: every
    # step failed as the env's error until the reset. As root, an unreadable file is
    # imitated (root reads it all the same).
    import builtins
    import os

    import openenv_gym.envs.git.env as git_env

    env.reset()
    assert _branch(env, "chmod 000 .git/HEAD") == ("main" if os.geteuid() == 0 else "")
    if os.geteuid() == 0:
        def unreadable_head(file, *args, **kwargs):
            if str(file).endswith(os.sep + "HEAD"):
                raise PermissionError(13, "Permission denied", str(file))
            return builtins.open(file, *args, **kwargs)

        monkeypatch.setattr(git_env, "open", unreadable_head, raising=False)
        obs, *_ = env.step(GitAction(command="true"))
        assert obs.branch == ""
        monkeypatch.undo()
    assert _branch(env, "chmod 644 .git/HEAD") == "main"
