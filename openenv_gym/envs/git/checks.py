"""Checks on a Git-v0 workspace: each inspects the final state and passes or fails.

Every check takes ``repo`` (folder under the workspace; default the task's repo) and its
own fields. Revisions are anything ``git rev-parse`` takes. A revision field (one of
:data:`REV_FIELDS`) that is a whole ``:/message`` names the newest commit whose message
matches *when the task is set up* (:func:`pin_revs` records its id then, before the agent
acts), so task files need no commit ids and a commit the agent makes later with that
message is not it.

The git calls of one step's checks share :data:`CHECK_BUDGET` seconds: once it is spent, the
check that was running and those after it fail (the step's output says where it ran out).

The checks read the repository's real objects and refs with no configuration the agent
could have written but the repository's own (see :data:`GIT_ENV` and :func:`_git`):
replace refs, grafts, a shallow file, a commit-graph, ``$HOME``'s config and the
repository's ``core.worktree`` are ignored.

| type | fields | passes when |
|---|---|---|
| branch_exists / branch_absent | branch | the local branch exists / does not |
| current_branch | branch | HEAD is on that branch |
| file_contains / file_lacks | path, text (str or list) | the working-tree file has / lacks every text |
| file_exists / file_absent | path | the working-tree file exists / does not |
| rev_file_contains / rev_file_lacks | rev, path, text | the file at ``rev`` has / lacks every text |
| path_untracked | path, rev (HEAD) | ``path`` is not in ``rev``'s tree |
| path_not_in_history | path, rev (HEAD) | no commit reachable from ``rev`` ever had ``path`` |
| no_conflict_markers | paths (all files) | no ``<<<<<<<``/``=======``/``>>>>>>>`` lines (a whole tree of more than :data:`SCAN_ENTRIES` entries, or files of more than :data:`SCAN_BYTES` bytes, fails) |
| clean_worktree | untracked (true) | ``git status`` shows nothing, and every tracked file is its index entry byte for byte |
| no_operation_in_progress | | no merge, rebase, cherry-pick, revert or bisect underway |
| is_ancestor / not_ancestor | ancestor, descendant | ``git merge-base --is-ancestor`` |
| same_commit | a, b | both name one commit |
| commit_message | rev (HEAD), pattern | the message matches the regex |
| commit_count | rev, count, base (none) | ``rev-list --count [base..]rev`` equals count |
| merge_commit / no_merge_commits | rev, base | ``rev`` has 2+ parents / no merges in ``base..rev`` |
| tag_exists | tag, annotated, points_to | the tag exists (is annotated, points at a commit) |
| stash_count | count | the stash holds that many entries |
| stash_has_file | path, text, index (0) | ``stash@{index}`` saved the file with every text (staged or tracked, or untracked with ``-u``/``-a``) |
| upstream | branch, upstream | the branch tracks ``upstream`` (``origin/x``) |
| remote_has_ref / remote_lacks_ref | ref, remote (origin), equals | the bare remote has the ref (at local ``equals``) |
| remote_contains | ref, rev, remote | the remote ref contains ``rev`` (resolved in the remote) |
| reverts | target, rev (HEAD) | ``rev`` is a ``git revert`` of ``target``: its message names ``target``'s id and its change undoes ``target``'s |
| file_unchanged | path, rev, at (worktree) | the working-tree file (or the file at ``at``) is byte for byte the file at ``rev`` (pin the task's tests) |
| command | run | a shell command (e.g. the repo's tests) exits 0, under the command limits, with no Python startup hook of ``$HOME`` and no module of the folder shadowing the standard library |
| unittest | tests, pattern (``test*.py``), rev (worktree) | at least ``tests`` unittest tests of the repo ran and all passed (none failed, errored or was skipped), by the report of a harness of the checker's, not by an exit status the code under test can set; with ``rev``, in a fresh export of that commit's tree (no untracked or ignored file of the worktree) |

Example:
    >>> sorted(CHECKS)[:3]
    ['branch_absent', 'branch_exists', 'clean_worktree']
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shlex
import stat
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

from openenv_gym.envs._exec import ExecResult, Limits
from openenv_gym.envs._files import remove_tree

if TYPE_CHECKING:
    from openenv_gym.envs.git.tasks import Task

__all__ = ["CHECKS", "CHECK_BUDGET", "CheckContext", "GIT_ENV", "REV_FIELDS", "pin_revs", "run_check",
           "run_checks"]

_MARKERS = re.compile(rb"^(<{7} |={7}$|>{7} )", re.MULTILINE)

#: Environment of every git call of the checks. The agent writes ``.git`` and ``$HOME``,
#: so nothing there may change which objects git reads or which config it loads.
GIT_ENV: dict[str, str] = {
    "GIT_NO_REPLACE_OBJECTS": "1",     # refs/replace/* swap any object for another
    "GIT_GRAFT_FILE": "/dev/null",     # .git/info/grafts rewrites parents (replace refs don't cover it)
    "GIT_CONFIG_GLOBAL": "/dev/null",  # $HOME/.gitconfig is the agent's
    "GIT_CONFIG_NOSYSTEM": "1",
    "XDG_CONFIG_HOME": "/dev/null",    # so are $HOME/.config/git/{config,ignore,attributes}
}

#: Options before every check's git subcommand: repo config that runs code or changes what
#: git reads is overridden (command-line ``-c`` beats the repository's config).
_SAFE = (
    "--shallow-file", "",                 # .git/shallow cuts history short ("" = no shallow file)
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",   # programs git would run
    "-c", "log.showSignature=false",      # git log would run the repo's gpg.program on a gpgsig
    "-c", "core.commitGraph=false",       # a hand-made commit-graph file can lie about parents
    "-c", "core.untrackedCache=false",    # a hand-made index extension can hide untracked files
    "-c", "core.checkStat=default", "-c", "core.trustctime=true",  # an edit with a reset mtime shows
)

#: Check fields that name revisions: a whole ``:/message`` value there is pinned at setup.
REV_FIELDS = frozenset({"rev", "a", "b", "ancestor", "descendant", "base", "points_to", "equals",
                        "target", "at"})


class CheckContext(Protocol):
    """What checks need from a workspace."""

    work: str
    remotes: str
    #: A folder of the env's own for the checks' scratch files (the tree a ``unittest`` runs in).
    tmp: str
    #: ``(repo folder, ":/message")`` -> the commit id it named at setup (:func:`pin_revs`).
    pins: Mapping[tuple[str, str], str]

    def run(self, argv: list[str], cwd: str, timeout: float = 10.0,
            env: Mapping[str, str] | None = None, agent_programs: bool = False) -> ExecResult:
        """Run a git command in ``cwd``, ``env`` added to its environment; with
        ``agent_programs``, under the agent's limits (the call can run a program the
        repository's config names)."""

    def shell(self, command: str, cwd: str, env: Mapping[str, str] | None = None,
              pass_fds: Sequence[int] = ()) -> ExecResult:
        """Run a shell command under the agent's limits, ``env`` added to its environment,
        ``pass_fds`` inherited."""


def _location(ctx: CheckContext, repo: str) -> tuple[str, ...]:
    """Where git finds the repository: given, never discovered, so a missing ``.git`` does
    not find a parent's repository and ``core.worktree`` does not move the worktree.
    Decided by the path, which is ours: a bare remote lives in ``ctx.remotes``."""
    path = os.path.normpath(repo)
    if os.path.dirname(path) == os.path.normpath(ctx.remotes):
        return ("--git-dir", path)
    return ("--git-dir", os.path.join(path, ".git"), "--work-tree", path)


def _git(ctx: CheckContext, repo: str, *args: str) -> ExecResult:
    """Every git call of the checks: the repository's real objects and refs (:data:`GIT_ENV`,
    :data:`_SAFE`)."""
    return ctx.run(["git", *_SAFE, *_location(ctx, repo), *args], cwd=repo, env=GIT_ENV)


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
    return _out(ctx, repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}")


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


def _rev_file(ctx: CheckContext, repo: str, rev: str, path: str) -> str | None:
    """The file at ``rev`` as committed, or None if ``path`` is no file there.

    ``cat-file blob``, not ``show``: the tree entry is the agent's to make, and a gitlink
    naming a commit of the repository made ``show`` print that commit's patch, through the
    textconv program the repository's config and attributes name (the agent's code, run by
    the worker outside the agent's limits), with the patch's text matched as the file's."""
    return _out(ctx, repo, "cat-file", "blob", f"{rev}:{path}")


def rev_file_contains(ctx: CheckContext, repo: str, rev: str, path: str, text: str | list[str]) -> bool:
    content = _rev_file(ctx, repo, rev, path)
    return content is not None and all(t in content for t in _texts(text))


def rev_file_lacks(ctx: CheckContext, repo: str, rev: str, path: str, text: str | list[str]) -> bool:
    content = _rev_file(ctx, repo, rev, path)
    return content is not None and not any(t in content for t in _texts(text))


def path_untracked(ctx: CheckContext, repo: str, path: str, rev: str = "HEAD") -> bool:
    listing = _out(ctx, repo, "ls-tree", "-r", "--name-only", rev, "--", path)
    return listing == ""


def path_not_in_history(ctx: CheckContext, repo: str, path: str, rev: str = "HEAD") -> bool:
    """No commit reachable from ``rev`` has ``path``: a file committed and then removed again
    in a later commit is still in the history (and pushed with it)."""
    # --full-history: by default a path-limited walk follows only a merge's parent that has
    # the same ``path``, so a side branch that added the file and removed it again, merged
    # in, is never walked.
    return _out(ctx, repo, "rev-list", "--full-history", "-n", "1", rev, "--", path) == ""


#: Most entries (files and folders) of a working tree :func:`no_conflict_markers` scans, and
#: most bytes it reads. A task's repository holds a handful of small files; the scan runs in
#: the worker on every step, with no timeout, so a tree past either bound (an agent's "tree
#: bomb": 300,000 empty files took 50 s a step, and the cost grew with the tree) fails the
#: check at once instead.
SCAN_ENTRIES = 10_000
SCAN_BYTES = 64 << 20


def no_conflict_markers(ctx: CheckContext, repo: str, paths: list[str] | None = None) -> bool:
    if not os.path.isdir(repo):
        return False
    if paths is None:
        paths = _tree_files(repo, SCAN_ENTRIES)
        if paths is None:
            return False  # too many to scan: see SCAN_ENTRIES
    budget = SCAN_BYTES
    for path in paths:
        data = _read_bytes(repo, path, min(1 << 20, budget + 1))
        if data is None:
            continue
        budget -= len(data)
        if budget < 0 or _MARKERS.search(data):
            return False
    return True


def _tree_files(repo: str, limit: int) -> list[str] | None:
    """The files of ``repo``'s working tree (what is not a folder, ``.git`` folders left out)
    relative to it, as :func:`os.walk` lists them; or None as soon as more than ``limit``
    entries are seen, without listing the rest (a folder is read lazily)."""
    found: list[str] = []
    seen = 0
    folders = [repo]
    while folders:
        try:
            listing = os.scandir(folders.pop())
        except OSError:  # as os.walk: a folder the agent made unreadable is skipped
            continue
        with listing:
            for entry in listing:
                seen += 1
                if seen > limit:
                    return None
                try:
                    folder = entry.is_dir()  # as os.walk: a link to a folder is one, not followed
                except OSError:
                    folder = False
                if not folder:
                    found.append(os.path.relpath(entry.path, repo))
                elif entry.name != ".git" and not entry.is_symlink():
                    folders.append(entry.path)
    return found


def clean_worktree(ctx: CheckContext, repo: str, untracked: bool = True) -> bool:
    # The one git call of the checks that runs a program of the repository's config: status
    # hashes a changed file through the clean filter its attributes name.
    args = ["status", "--porcelain", "--untracked-files=" + ("normal" if untracked else "no")]
    status = ctx.run(["git", *_SAFE, *_location(ctx, repo), *args], cwd=repo, env=GIT_ENV,
                     agent_programs=True)
    return status.exit_code == 0 and status.stdout.strip() == "" \
        and not _index_hides_changes(ctx, repo)


def _index_hides_changes(ctx: CheckContext, repo: str) -> bool:
    """Whether ``git status`` could miss a change (or the index cannot be read): one listing
    of the index serves both ways it can.

    - The index tells status not to look at a file: ``git update-index --assume-unchanged``
      (tag in lower case) or ``--skip-worktree`` (``S``).
    - A tracked file is not its index entry byte for byte. Status trusts an entry whose size
      and times match the file, and hashes a file through the clean filter its attributes
      name: ``git add`` through a filter that prints the committed content stores the old
      blob with the new file's stat data, and the edit never shows, even after the filter is
      gone. So every tracked regular file is hashed as it is on disk, without filters.
    """
    listing = _git(ctx, repo, "ls-files", "-v", "-s", "-z")
    if listing.exit_code != 0:
        return True
    paths, blobs = [], []
    for entry in listing.stdout.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        tag, mode, blob, _stage = meta.split()
        if tag.islower() or tag == "S":
            return True
        if mode in ("100644", "100755"):
            paths.append(path)
            blobs.append(blob)
    if not paths:
        return False
    hashed = _git(ctx, repo, "hash-object", "--no-filters", "--", *paths)
    return hashed.exit_code != 0 or hashed.stdout.split() != blobs


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


def stash_has_file(ctx: CheckContext, repo: str, path: str, text: str | list[str], index: int = 0) -> bool:
    """``stash@{index}`` saved the file: in its work-tree commit (a tracked or staged file,
    ``git add -A && git stash``) or in its untracked-files commit (``git stash -u``/``-a``)."""
    stash = f"stash@{{{int(index)}}}"
    return any(rev_file_contains(ctx, repo, rev, path, text) for rev in (stash, f"{stash}^3"))


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


def _change(ctx: CheckContext, repo: str, old: str, new: str) -> list[str] | None:
    """The change from commit ``old`` to ``new`` as patch lines, without the line numbers and
    blob ids that differ when other commits touched the same files."""
    patch = _out(ctx, repo, "diff-tree", "-p", "-U0", "--no-color", "--no-renames",
                 "--no-textconv", old, new, "--")
    if patch is None:
        return None
    return [re.sub(r"^@@ .* @@.*", "@@", line) for line in patch.splitlines()
            if not line.startswith("index ")]


def reverts(ctx: CheckContext, repo: str, target: str, rev: str = "HEAD") -> bool:
    """``rev`` is a revert of ``target`` as ``git revert`` makes it: the message says
    "This reverts commit <target's id>", and the change from ``rev``'s first parent is
    ``target``'s change undone (not just any commit with the right file contents)."""
    t, r = _commit(ctx, repo, target), _commit(ctx, repo, rev)
    if t is None or r is None:
        return False
    message = _out(ctx, repo, "log", "-1", "--format=%B", r, "--")
    if message is None or f"This reverts commit {t}" not in message:
        return False
    undo = _change(ctx, repo, t, f"{t}^")
    return bool(undo) and undo == _change(ctx, repo, f"{r}^", r)


def file_unchanged(ctx: CheckContext, repo: str, path: str, rev: str, at: str | None = None) -> bool:
    """The working-tree file (with ``at``: the file in that commit) is the one at ``rev`` (a
    ``:/message`` pinned at setup): a ``command`` check that runs the repo's tests judges with
    the task's tests, not edited ones."""
    if at is not None:
        # The whole tree entry, mode too: a link whose target is the file's text, or a gitlink
        # naming the file's blob id, has the same id but is no file the tests would load.
        entry = _out(ctx, repo, "ls-tree", "--full-tree", "-z", rev, "--", path)
        return bool(entry) and entry == _out(ctx, repo, "ls-tree", "--full-tree", "-z", at, "--", path)
    blob = _out(ctx, repo, "rev-parse", "--verify", "-q", f"{rev}:{path}")
    content = _read_bytes(repo, path)
    if content is None or not blob:
        return False
    # Compared by object id, as git names the blob: the file's bytes need no decoding.
    digest = hashlib.sha256 if len(blob) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(content) + content).hexdigest() == blob


#: The environment of ``command`` checks: the agent writes ``$HOME`` and the repository, so
#: Python runs no startup hook of theirs (a ``usercustomize`` or ``.pth`` file in the user
#: site-packages, ``os._exit(0)`` before any test) and does not put the current folder ahead
#: of the standard library (a ``unittest/`` folder there, hidden by ``.git/info/exclude``,
#: would replace the test runner). ``python3 -m unittest`` still finds the repo's modules:
#: its discovery puts the start folder on ``sys.path``.
COMMAND_ENV: dict[str, str] = {"PYTHONNOUSERSITE": "1", "PYTHONSAFEPATH": "1"}


def command(ctx: CheckContext, repo: str, run: str) -> bool:
    """The command exits 0. What it runs that the agent wrote (the repo's own code) decides
    that exit status: see the README's threat model."""
    return os.path.isdir(repo) and ctx.shell(run, repo, COMMAND_ENV).exit_code == 0


#: The ``unittest`` check's harness (``python3 -c``, in the repo, under the agent's limits). The
#: key arrives on a pipe, read and closed before any module of the repo is imported, and lives
#: only in a local of ``main``: code under test that ends the process (``sys.exit(0)``,
#: ``os._exit(0)``), skips the tests (``raise unittest.SkipTest`` at import) or prints a result
#: has no report with the key to show. Code written to walk up to ``main``'s frame can read it:
#: the README's threat model says so.
_UNITTEST_HARNESS = """\
import os, sys, unittest
def main(key_fd, report_fd, pattern):
    key = os.read(key_fd, 64)
    os.close(key_fd)
    result = unittest.TestResult()
    unittest.defaultTestLoader.discover(".", pattern=pattern, top_level_dir=".").run(result)
    counts = (result.testsRun, result.failures, result.errors, result.skipped,
              result.expectedFailures, result.unexpectedSuccesses)
    os.write(report_fd, key + b" %d" % counts[0] + b"".join(b" %d" % len(c) for c in counts[1:]))
main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
"""


def _export(ctx: CheckContext, repo: str, rev: str, parent: str) -> str | None:
    """Check out ``rev``'s tree into ``parent/tree``: the folder, or None.

    Through a git directory and an index of our own that borrow only the repository's
    objects: the repository's config and ``info/attributes`` (a smudge filter rewrites the
    files it checks out, ``core.symlinks=false`` turns a link into a file of its text) play
    no part, and its index and worktree are untouched. A committed link that leads out of
    the tree (to an ignored, untracked file of the worktree) fails the export: the tests
    would import code that is not in the commit."""
    commit = _commit(ctx, repo, rev)
    where = _out(ctx, repo, "rev-parse", "--path-format=absolute", "--git-path", "objects",
                 "--show-object-format")
    if not (commit and where and len(where.splitlines()) == 2):
        return None
    objects, fmt = where.splitlines()
    git_dir, dest = os.path.join(parent, "git"), os.path.join(parent, "tree")
    # The smallest git directory git accepts, written here rather than by `git init` (a
    # process less per check): no config of the repository's, no hooks, its objects borrowed.
    for folder in (dest, git_dir, os.path.join(git_dir, "refs")):
        os.mkdir(folder)
    Path(git_dir, "HEAD").write_text("ref: refs/heads/export\n")
    Path(git_dir, "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n" if fmt == "sha1" else
        f"[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = {fmt}\n")
    env = {**GIT_ENV, "GIT_OBJECT_DIRECTORY": objects, "GIT_INDEX_FILE": os.path.join(parent, "index")}
    git = ["git", *_SAFE, "--git-dir", git_dir, "--work-tree", dest]
    for args in (["read-tree", commit], ["checkout-index", "-a"]):
        if ctx.run([*git, *args], cwd=dest, env=env).exit_code != 0:
            return None
    root = os.path.realpath(dest)
    for top, dirs, files in os.walk(dest):
        for name in dirs + files:
            path = os.path.join(top, name)
            if os.path.islink(path) and not os.path.realpath(path).startswith(root + os.sep):
                return None
    return dest


def unittest(ctx: CheckContext, repo: str, tests: int, pattern: str = "test*.py",
             rev: str | None = None) -> bool:
    """The repo's unittest suite passes: at least ``tests`` tests ran (the task's; tests the
    agent added count too), none failed, errored or was skipped. With ``rev``, the tests run
    in a fresh checkout of that commit's tree: a module the agent left untracked (and hid with
    an ignore rule) cannot shadow the committed code. Judged by the harness's keyed report,
    not by the exit status, which the code under test decides (see
    :data:`_UNITTEST_HARNESS`). Code under test that patches unittest itself is not stopped:
    see the README's threat model."""
    if not os.path.isdir(repo):
        return False
    if rev is None:
        return _unittest_in(ctx, repo, tests, pattern)
    if os.path.islink(ctx.tmp):
        return False  # the agent's to write: never followed out of the env's folder
    os.makedirs(ctx.tmp, mode=0o700, exist_ok=True)
    parent = tempfile.mkdtemp(prefix="check-", dir=ctx.tmp)
    try:
        tree = _export(ctx, repo, rev, parent)
        return tree is not None and _unittest_in(ctx, tree, tests, pattern)
    finally:
        remove_tree(parent)  # the commit's tree is the agent's: any depth


def _unittest_in(ctx: CheckContext, folder: str, tests: int, pattern: str) -> bool:
    key = secrets.token_hex(16).encode()
    key_r, key_w = os.pipe()
    report_r, report_w = os.pipe()
    try:
        os.write(key_w, key)
        os.close(key_w)
        key_w = -1
        run = (f"python3 -c {shlex.quote(_UNITTEST_HARNESS)} {key_r} {report_w} "
               f"{shlex.quote(pattern)}")
        ctx.shell(run, folder, COMMAND_ENV, pass_fds=(key_r, report_w))
        os.close(report_w)
        report_w = -1
        os.set_blocking(report_r, False)  # a process the tests left behind may hold it open
        try:
            report = os.read(report_r, 256)
        except BlockingIOError:
            return False
    finally:
        for fd in (key_r, key_w, report_r, report_w):
            if fd >= 0:
                os.close(fd)
    fields = report.split(b" ")
    if len(fields) != 7 or not secrets.compare_digest(fields[0], key) \
            or not all(f.isdigit() for f in fields[1:]):
        return False
    ran, *problems = (int(f) for f in fields[1:])
    return ran >= int(tests) and not any(problems)


#: Check type name -> function(ctx, repo, **fields) -> bool.
CHECKS: dict[str, Callable[..., bool]] = {f.__name__: f for f in (
    branch_exists, branch_absent, current_branch, file_contains, file_lacks, file_exists,
    file_absent, rev_file_contains, rev_file_lacks, path_untracked, no_conflict_markers,
    clean_worktree, no_operation_in_progress, is_ancestor, not_ancestor, same_commit,
    commit_message, commit_count, merge_commit, no_merge_commits, tag_exists, stash_count,
    stash_has_file, path_not_in_history, upstream, remote_has_ref, remote_lacks_ref, remote_contains,
    reverts, file_unchanged, command, unittest,
)}


def _is_message_rev(field: str, value: Any) -> bool:
    return field in REV_FIELDS and isinstance(value, str) and value.startswith(":/")


def pin_revs(ctx: CheckContext, task: "Task") -> dict[tuple[str, str], str]:
    """Resolve the task's ``:/message`` revisions in its just-built start state.

    Each is looked up in the check's repo, then in the bare remotes (a teammate's commit
    may be only there); commit ids are the same in every repository.

    Args:
        ctx: The workspace, right after the task's setup ran.
        task: The task.

    Returns:
        ``(repo folder, rev)`` -> commit id, for :attr:`CheckContext.pins`.

    Raises:
        ValueError: A ``:/message`` matches no commit (a bug in the task file).
    """
    remotes = sorted(e.path for e in os.scandir(ctx.remotes) if e.name.endswith(".git")) \
        if os.path.isdir(ctx.remotes) else []
    pins: dict[tuple[str, str], str] = {}
    for check in task.checks:
        folder = str(check.params.get("repo", task.repo))
        for field, rev in check.params.items():
            if not _is_message_rev(field, rev) or (folder, rev) in pins:
                continue
            for repo in [os.path.join(ctx.work, folder), *remotes]:
                # ":/regex" names a commit already, and a suffix would join the regex.
                found = _out(ctx, repo, "rev-parse", "--verify", "-q", rev)
                if found:
                    pins[(folder, rev)] = found
                    break
            else:
                raise ValueError(f"task {task.name!r}: {field} = {rev!r} matches no commit after setup")
    return pins


#: A branch's upstream or push destination (``@{u}``, ``@{upstream}``, ``@{push}``: any case).
_TRACKING = re.compile(r"@\{(?:u|upstream|push)\}", re.IGNORECASE)


def _branch_first(ctx: CheckContext, repo: str, rev: str,
                  branches: dict[str, frozenset[str]]) -> str:
    """``rev`` with a leading branch name spelled out (``main~1`` -> ``refs/heads/main~1``):
    ``git rev-parse main`` takes a tag (or ``.git/main``) named ``main`` over the branch, so
    a tag the agent made would be judged in the branch's place. ``branches`` caches each
    repo's branch names for one round of checks (one listing, not one git call per field)."""
    name = re.match(r"[^~^:@]*", rev).group()  # type: ignore[union-attr]
    if not name or name.startswith("refs/") or _TRACKING.search(rev, len(name)):
        # ``main@{upstream}``/``@{push}`` name another ref through the branch's config; git
        # reads the name there as a branch already, and ``refs/heads/main@{u}`` resolves
        # to nothing.
        return rev
    if repo not in branches:
        listing = _out(ctx, repo, "for-each-ref", "--format=%(refname:lstrip=2)",
                       "refs/heads") if os.path.isdir(repo) else None
        branches[repo] = frozenset((listing or "").splitlines())
    return f"refs/heads/{rev}" if name in branches[repo] else rev


def run_check(ctx: CheckContext, default_repo: str, kind: str, params: dict[str, Any],
              branches: dict[str, frozenset[str]] | None = None) -> bool:
    """Run one check; a malformed check or any error counts as failed, never raises.

    Args:
        ctx: The workspace.
        default_repo: The task's repo folder (relative to the workspace).
        kind: The check type.
        params: Its fields (``repo`` overrides the folder).
        branches: Each repo's branch names, shared by the checks of one round (filled on
            first use: see :func:`run_checks`).
    """
    branches = {} if branches is None else branches
    params = dict(params)
    folder = params.pop("repo", default_repo)
    repo = os.path.join(ctx.work, folder)
    try:
        for field, value in params.items():
            if _is_message_rev(field, value):
                # Never searched now: the agent can make a commit with any message.
                pinned = ctx.pins.get((folder, value))
                if pinned is None:
                    return False
                params[field] = pinned
            elif field in REV_FIELDS and isinstance(value, str):
                params[field] = _branch_first(ctx, repo, value, branches)
        return bool(CHECKS[kind](ctx, repo, **params))
    except (TypeError, ValueError, OSError, re.error, RecursionError):
        # RecursionError: os.walk of folders the agent nested deeper than Python recurses.
        return False


#: Seconds the git calls of one round of checks (:func:`run_checks`: once per step) may take
#: together. Each call has its own 10 s limit, but the repository is the agent's: a config that
#: makes git block (an ``include.path`` naming a FIFO) or a repository git is slow to read made
#: every call of every check wait its 10 s: 50 s a step for merge-conflict's 7 checks, and with
#: more calls past the client's deadline for the step. A task's repository answers in
#: milliseconds. The ``command`` and ``unittest`` checks' own runs keep their limit (60 s each)
#: and are not counted.
CHECK_BUDGET = 10.0


class _BudgetSpent(Exception):
    """The round's :data:`CHECK_BUDGET` ran out during a check."""


class _Budgeted:
    """``ctx`` whose git calls draw on one budget of seconds: each call may take what is left
    of it, and once it is spent a call raises :class:`_BudgetSpent` (its answer, cut short, is
    not the repository's)."""

    def __init__(self, ctx: CheckContext, seconds: float) -> None:
        self._ctx = ctx
        self.left = seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def run(self, argv: list[str], cwd: str, timeout: float = 10.0,
            env: Mapping[str, str] | None = None, agent_programs: bool = False) -> ExecResult:
        left = self.left
        if left <= 0:
            raise _BudgetSpent
        allowed = min(timeout, left)
        start = time.monotonic()
        result = self._ctx.run(argv, cwd, allowed, env, agent_programs)
        self.left = left - (time.monotonic() - start)
        if self.left <= 0 or (result.timed_out and allowed == left):
            self.left = 0.0
            raise _BudgetSpent
        return result


def run_checks(ctx: CheckContext, default_repo: str,
               checks: Sequence[tuple[str, dict[str, Any]]],
               notes: list[str] | None = None) -> list[bool]:
    """Run a task's checks as one round: :func:`run_check` each, with the repos' branch
    names listed once for all of them (the checks change no ref), their git calls sharing
    one :data:`CHECK_BUDGET`. Once it is spent, the check that was running and those after
    it fail without running further.

    Args:
        ctx: The workspace.
        default_repo: The task's repo folder (relative to the workspace).
        checks: ``(type, fields)`` of each check.
        notes: If given, gets a line saying where the budget ran out, if it did.

    Returns:
        Whether each check passed, in order.
    """
    branches: dict[str, frozenset[str]] = {}
    budgeted = _Budgeted(ctx, CHECK_BUDGET)
    results: list[bool] = []
    for kind, params in checks:
        try:
            results.append(run_check(budgeted, default_repo, kind, params, branches))  # type: ignore[arg-type]
        except _BudgetSpent:
            if notes is not None:
                notes.append(f"[the step's check budget of {CHECK_BUDGET:g} s ran out at check "
                             f"{len(results) + 1} of {len(checks)} ({kind}): it and the "
                             f"{len(checks) - len(results) - 1} after it count as failed]")
            return results + [False] * (len(checks) - len(results))
    return results
