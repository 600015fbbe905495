"""Checks on a Git-v0 workspace: each inspects the final state and passes or fails.

Every check takes ``repo`` (folder under the workspace; default the task's repo) and its
own fields. Revisions are anything ``git rev-parse`` takes, including ``:/message``
(the newest commit whose message matches, from any ref), so task files need no commit ids.

| type | fields | passes when |
|---|---|---|
| branch_exists / branch_absent | branch | the local branch exists / does not |
| current_branch | branch | HEAD is on that branch |
| file_contains / file_lacks | path, text (str or list) | the working-tree file has / lacks every text |
| file_exists / file_absent | path | the working-tree file exists / does not |
| rev_file_contains / rev_file_lacks | rev, path, text | the file at ``rev`` has / lacks every text |
| path_untracked | path, rev (HEAD) | ``path`` is not in ``rev``'s tree |
| no_conflict_markers | paths (all files) | no ``<<<<<<<``/``=======``/``>>>>>>>`` lines |
| clean_worktree | untracked (true) | ``git status`` shows nothing |
| no_operation_in_progress | | no merge, rebase, cherry-pick, revert or bisect underway |
| is_ancestor / not_ancestor | ancestor, descendant | ``git merge-base --is-ancestor`` |
| same_commit | a, b | both name one commit |
| commit_message | rev (HEAD), pattern | the message matches the regex |
| commit_count | rev, count, base (none) | ``rev-list --count [base..]rev`` equals count |
| merge_commit / no_merge_commits | rev, base | ``rev`` has 2+ parents / no merges in ``base..rev`` |
| tag_exists | tag, annotated, points_to | the tag exists (is annotated, points at a commit) |
| stash_count | count | the stash holds that many entries |
| upstream | branch, upstream | the branch tracks ``upstream`` (``origin/x``) |
| remote_has_ref / remote_lacks_ref | ref, remote (origin), equals | the bare remote has the ref (at local ``equals``) |
| remote_contains | ref, rev, remote | the remote ref contains ``rev`` (resolved in the remote) |
| command | run | a shell command (e.g. the repo's tests) exits 0, under the command limits |

Example:
    >>> sorted(CHECKS)[:3]
    ['branch_absent', 'branch_exists', 'clean_worktree']
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any, Callable, Protocol

from openenv_gym.envs._exec import ExecResult, Limits

__all__ = ["CHECKS", "CheckContext", "run_check"]

_MARKERS = re.compile(rb"^(<{7} |={7}$|>{7} )", re.MULTILINE)
#: Config that keeps the agent's repo settings from running code when a check runs git.
_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")


class CheckContext(Protocol):
    """What checks need from a workspace."""

    work: str
    remotes: str

    def run(self, argv: list[str], cwd: str, timeout: float = 10.0) -> ExecResult:
        """Run a trusted command (git plumbing) in ``cwd``."""

    def shell(self, command: str, cwd: str) -> ExecResult:
        """Run a shell command under the agent's limits."""


def _git(ctx: CheckContext, repo: str, *args: str) -> ExecResult:
    return ctx.run(["git", *_SAFE, *args], cwd=repo)


def _ok(ctx: CheckContext, repo: str, *args: str) -> bool:
    return _git(ctx, repo, *args).exit_code == 0


def _out(ctx: CheckContext, repo: str, *args: str) -> str | None:
    r = _git(ctx, repo, *args)
    return r.stdout.strip() if r.exit_code == 0 else None


def _texts(text: str | list[str]) -> list[str]:
    return [text] if isinstance(text, str) else list(text)


#: Bytes of a working-tree file a check reads at most (the agent's default file-size limit).
READ_LIMIT: int = Limits.file_size_bytes  # type: ignore[assignment]


def _read_bytes(repo: str, path: str, limit: int = READ_LIMIT) -> bytes | None:
    """A regular file of the agent's repo, read by the (unconfined) worker: or None.

    The agent controls the tree, so nothing is followed out of it and nothing blocks: a
    symlink to a host file or to ``/dev/zero`` (an endless read), or a FIFO (an open that
    never returns), is not a file the check can read.
    """
    root = os.path.realpath(repo)
    full = os.path.join(root, path)
    if os.path.realpath(os.path.dirname(full)) != os.path.dirname(os.path.normpath(full)) \
            or not os.path.normpath(full).startswith(root + os.sep):
        return None  # a folder on the way is a link, or the path leaves the repo
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read(limit)


def _read(repo: str, path: str) -> str | None:
    data = _read_bytes(repo, path)
    return data.decode("utf-8", errors="replace") if data is not None else None


def _commit(ctx: CheckContext, repo: str, rev: str) -> str | None:
    # ":/regex" names a commit already, and a suffix would join the regex.
    return _out(ctx, repo, "rev-parse", "--verify", "-q", rev if rev.startswith(":/") else f"{rev}^{{commit}}")


def branch_exists(ctx: CheckContext, repo: str, branch: str) -> bool:
    return _ok(ctx, repo, "show-ref", "--verify", "-q", f"refs/heads/{branch}")


def branch_absent(ctx: CheckContext, repo: str, branch: str) -> bool:
    return os.path.isdir(os.path.join(repo, ".git")) and not branch_exists(ctx, repo, branch)


def current_branch(ctx: CheckContext, repo: str, branch: str) -> bool:
    return _out(ctx, repo, "symbolic-ref", "--short", "-q", "HEAD") == branch


def file_contains(ctx: CheckContext, repo: str, path: str, text: str | list[str]) -> bool:
    content = _read(repo, path)
    return content is not None and all(t in content for t in _texts(text))


def file_lacks(ctx: CheckContext, repo: str, path: str, text: str | list[str]) -> bool:
    content = _read(repo, path)
    return content is not None and not any(t in content for t in _texts(text))


def file_exists(ctx: CheckContext, repo: str, path: str) -> bool:
    return os.path.isfile(os.path.join(repo, path))


def file_absent(ctx: CheckContext, repo: str, path: str) -> bool:
    return os.path.isdir(repo) and not os.path.lexists(os.path.join(repo, path))


def rev_file_contains(ctx: CheckContext, repo: str, rev: str, path: str, text: str | list[str]) -> bool:
    content = _out(ctx, repo, "show", f"{rev}:{path}")
    return content is not None and all(t in content for t in _texts(text))


def rev_file_lacks(ctx: CheckContext, repo: str, rev: str, path: str, text: str | list[str]) -> bool:
    content = _out(ctx, repo, "show", f"{rev}:{path}")
    return content is not None and not any(t in content for t in _texts(text))


def path_untracked(ctx: CheckContext, repo: str, path: str, rev: str = "HEAD") -> bool:
    listing = _out(ctx, repo, "ls-tree", "-r", "--name-only", rev, "--", path)
    return listing == ""


def no_conflict_markers(ctx: CheckContext, repo: str, paths: list[str] | None = None) -> bool:
    if not os.path.isdir(repo):
        return False
    if paths is None:
        paths = []
        for top, dirs, files in os.walk(repo):
            dirs[:] = [d for d in dirs if d != ".git"]
            paths += [os.path.relpath(os.path.join(top, f), repo) for f in files]
    for path in paths:
        data = _read_bytes(repo, path, 1 << 20)
        if data is not None and _MARKERS.search(data):
            return False
    return True


def clean_worktree(ctx: CheckContext, repo: str, untracked: bool = True) -> bool:
    status = _out(ctx, repo, "status", "--porcelain",
                  "--untracked-files=" + ("normal" if untracked else "no"))
    return status == ""


def no_operation_in_progress(ctx: CheckContext, repo: str) -> bool:
    git_dir = os.path.join(repo, ".git")
    markers = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_LOG",
               "rebase-merge", "rebase-apply")
    return os.path.isdir(git_dir) and not any(os.path.exists(os.path.join(git_dir, m)) for m in markers)


def is_ancestor(ctx: CheckContext, repo: str, ancestor: str, descendant: str) -> bool:
    a, d = _commit(ctx, repo, ancestor), _commit(ctx, repo, descendant)
    return bool(a and d) and _ok(ctx, repo, "merge-base", "--is-ancestor", a, d)


def not_ancestor(ctx: CheckContext, repo: str, ancestor: str, descendant: str) -> bool:
    a, d = _commit(ctx, repo, ancestor), _commit(ctx, repo, descendant)
    return bool(a and d) and not _ok(ctx, repo, "merge-base", "--is-ancestor", a, d)


def same_commit(ctx: CheckContext, repo: str, a: str, b: str) -> bool:
    ca = _commit(ctx, repo, a)
    return ca is not None and ca == _commit(ctx, repo, b)


def commit_message(ctx: CheckContext, repo: str, pattern: str, rev: str = "HEAD") -> bool:
    message = _out(ctx, repo, "log", "-1", "--format=%B", rev, "--")
    return message is not None and re.search(pattern, message, re.MULTILINE) is not None


def commit_count(ctx: CheckContext, repo: str, rev: str, count: int, base: str | None = None) -> bool:
    out = _out(ctx, repo, "rev-list", "--count", f"{base}..{rev}" if base else rev, "--")
    return out is not None and out.isdigit() and int(out) == count


def merge_commit(ctx: CheckContext, repo: str, rev: str) -> bool:
    return _commit(ctx, repo, f"{rev}^2") is not None


def no_merge_commits(ctx: CheckContext, repo: str, rev: str, base: str | None = None) -> bool:
    return _out(ctx, repo, "rev-list", "--merges", f"{base}..{rev}" if base else rev, "--") == ""


def tag_exists(ctx: CheckContext, repo: str, tag: str, annotated: bool | None = None,
               points_to: str | None = None) -> bool:
    kind = _out(ctx, repo, "cat-file", "-t", f"refs/tags/{tag}")
    if kind is None or (annotated is not None and (kind == "tag") != annotated):
        return False
    return points_to is None or same_commit(ctx, repo, f"refs/tags/{tag}", points_to)


def stash_count(ctx: CheckContext, repo: str, count: int) -> bool:
    out = _out(ctx, repo, "stash", "list")
    return out is not None and len(out.splitlines()) == count


def upstream(ctx: CheckContext, repo: str, branch: str, upstream: str) -> bool:
    return _out(ctx, repo, "rev-parse", "--abbrev-ref", f"{branch}@{{upstream}}") == upstream


def _remote(ctx: CheckContext, remote: str) -> str:
    return os.path.join(ctx.remotes, f"{remote}.git")


def remote_has_ref(ctx: CheckContext, repo: str, ref: str, remote: str = "origin",
                   equals: str | None = None) -> bool:
    there = _commit(ctx, _remote(ctx, remote), ref)
    return there is not None and (equals is None or there == _commit(ctx, repo, equals))


def remote_lacks_ref(ctx: CheckContext, repo: str, ref: str, remote: str = "origin") -> bool:
    return os.path.isdir(_remote(ctx, remote)) and _commit(ctx, _remote(ctx, remote), ref) is None


def remote_contains(ctx: CheckContext, repo: str, ref: str, rev: str, remote: str = "origin") -> bool:
    return is_ancestor(ctx, _remote(ctx, remote), rev, ref)


def command(ctx: CheckContext, repo: str, run: str) -> bool:
    return os.path.isdir(repo) and ctx.shell(run, repo).exit_code == 0


#: Check type name -> function(ctx, repo, **fields) -> bool.
CHECKS: dict[str, Callable[..., bool]] = {f.__name__: f for f in (
    branch_exists, branch_absent, current_branch, file_contains, file_lacks, file_exists,
    file_absent, rev_file_contains, rev_file_lacks, path_untracked, no_conflict_markers,
    clean_worktree, no_operation_in_progress, is_ancestor, not_ancestor, same_commit,
    commit_message, commit_count, merge_commit, no_merge_commits, tag_exists, stash_count,
    upstream, remote_has_ref, remote_lacks_ref, remote_contains, command,
)}


def run_check(ctx: CheckContext, default_repo: str, kind: str, params: dict[str, Any]) -> bool:
    """Run one check; a malformed check or any error counts as failed, never raises.

    Args:
        ctx: The workspace.
        default_repo: The task's repo folder (relative to the workspace).
        kind: The check type.
        params: Its fields (``repo`` overrides the folder).
    """
    params = dict(params)
    repo = os.path.join(ctx.work, params.pop("repo", default_repo))
    try:
        return bool(CHECKS[kind](ctx, repo, **params))
    except (TypeError, ValueError, OSError, re.error):
        return False
