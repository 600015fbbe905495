"""Git-v0 workspaces: the worker's shared root and server, task snapshots, fast restore.

Per worker process: one root folder (under :func:`tempfile.gettempdir`: the container's
tmpfs, or the process worker's private one as root), one :class:`~openenv_gym.envs.git.server.GitHttpServer` serving it, and one
snapshot per task, built the first time the task is used. Per env: a folder
``<root>/<id>/`` with ``work/`` (where commands run), ``remotes/`` (bare repos served at
``$REMOTE``), ``home/`` (HOME with the git identity and ``safe.directory``) and ``tmp/``.
Reset copies the task's snapshot over the env's folder and points the clones' remote URLs
at the env's own remotes: no re-clone, no setup replay.

The agent's commands (and ``command`` checks, which run under its limits) are confined with
Landlock where the kernel has it (:mod:`~openenv_gym.envs._confine`): they read the system
and the worker's Python, write only in the env's own folder, and reach no TCP port but the
worker's git server. So are the checks' git calls and the git server's backend for this
env's remotes, since git runs programs named in the agent's repository config (a clean
filter, ``core.alternateRefsCommand``); the server refuses every other env's remotes.
Task setup is trusted and runs unconfined.

Example:
    >>> ws = Workspace()
    >>> ws.restore(None)                      # free-form: an empty workspace with origin.git
    >>> ws.command("git init -q demo && ls", timeout=10).stdout
    'demo\\n'
    >>> ws.close()
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
import weakref
from dataclasses import replace
from typing import Callable, Mapping, Sequence

from openenv_gym.envs._confine import Confinement, Ruleset, python_roots, system_roots
from openenv_gym.envs._exec import (NO_SANDBOX_FUNCTIONS, OUTPUT_LIMIT, ExecResult, Limits, gate_line,
                                    held_start, minimal_environ, reap_orphans, run)
from openenv_gym.envs._files import empty_folder, remove_tree
from openenv_gym.envs.git.checks import pin_revs
from openenv_gym.envs.git.server import GitHttpServer
from openenv_gym.envs.git.tasks import SETUP_PRELUDE, Task

__all__ = ["Workspace", "TaskSetupError", "SHELL_CHECK_TIMEOUT"]


GITCONFIG = """\
[user]
\tname = Agent
\temail = agent@example.com
[init]
\tdefaultBranch = main
\ttemplateDir = {templates}
[safe]
\tdirectory = *
[core]
\tpager = cat
\teditor = true
[advice]
\tdetachedHead = false
\tskippedCherryPicks = false
[pull]
\trebase = false
[color]
\tui = false
[commit]
\tgpgsign = false
"""

#: Added to :data:`GITCONFIG` where the machine has ``vimdiff``. ``git mergetool`` with no
#: ``merge.tool`` guesses one and asks "Hit return to start merge resolution tool" on stdin,
#: which is ``/dev/null``: it stopped there, before Vim's no-terminal message, and left its
#: ``*_BASE_*``/``*_LOCAL_*``/``*_REMOTE_*``/``*_BACKUP_*`` files untracked in the repository.
#: A configured tool is not asked for: Vim quits with its message and git removes the files.
#: Not without vim (the docker image): git would then make the files before finding no
#: ``vim``, where a guess that finds no tool stops before making any.
MERGETOOL_CONFIG = """\
[merge]
\ttool = vimdiff
"""

#: The editor git starts for a message (``git commit`` without ``-m``, ``git tag -a``): there is
#: no terminal, so it keeps the text as git wrote it (a merge's or an amend's message stays as
#: it was, an empty one aborts the command, as ``true`` did) and, when there was no message,
#: says how to give one, beside git's own "Aborting commit due to empty commit message."
#: git runs it through ``sh -c '$GIT_EDITOR "$@"'``: a function of the file's path. "No
#: message" is judged as git judges it: what is left after ``git stripspace -s`` with the
#: comment character git wrote the file with (``core.commentChar``; with ``auto``, the one its
#: "Lines starting with 'X'" note names), without what follows the scissors line (``commit -v``
#: puts the diff below it, and git drops it).
GIT_EDITOR = ("_no_editor() { "
              "_m=$(sed '/ -\\{24\\} >8 -\\{24\\}$/,$d' \"$1\"); "
              "_c=$(git config --get-regexp '^core[.]comment(char|string)$' | sed -n '$s/^[^ ]* //p'); "
              "[ \"$_c\" = auto ] && _c=$(printf '%s\\n' \"$_m\" | "
              "sed -n \"s/^.* with '\\(.*\\)' will be .*$/\\1/p\" | sed -n '$p'); "
              "printf '%s\\n' \"$_m\" | git -c core.commentChar=\"${_c:-#}\" stripspace -s | grep -q . || echo '"
              'hint: there is no editor here (no terminal), so git got no message. Give it on the '
              'command line: git commit -m "message" (or -F FILE), git commit --amend -m "message", '
              'git tag -a NAME -m "message".'
              "' >&2; }; _no_editor")
#: The editor of ``git rebase -i``'s todo list: it runs the list as git wrote it (every commit
#: picked, ``--autosquash`` applied), as ``true`` did, and says so: the agent sees why nothing
#: was squashed or reworded, and how to edit the list with a command.
GIT_SEQUENCE_EDITOR = ("_no_editor() { echo '"
                       'hint: there is no editor here (no terminal), so git rebase -i runs its todo '
                       'list as git wrote it (every commit picked). To change the list, name a '
                       'command that edits it: GIT_SEQUENCE_EDITOR="sed -i 2,3s/^pick/fixup/" '
                       'git rebase -i HEAD~3 (folds the last two commits into the one before, keeping its message); '
                       'or squash with git reset --soft BASE and git commit -m "message".'
                       "' >&2; }; _no_editor")

#: Seconds of a ``command`` or ``unittest`` check's run (each its own, beside the checks'
#: shared :data:`~openenv_gym.envs.git.checks.CHECK_BUDGET`).
SHELL_CHECK_TIMEOUT = 60.0
#: Setup runs once per task per worker; a broken task file must not hang it.
SETUP_TIMEOUT = 120.0
#: A command's default limits beside :class:`~openenv_gym.envs._exec.Limits`' own: git and a
#: test suite need more memory and processes than one Python snippet.
LIMITS = {"memory_bytes": 2 << 30, "processes": 128}


class TaskSetupError(RuntimeError):
    """A task's setup script failed (a bug in the task file); the message has its output."""


class _Shared:
    """What all Git-v0 envs of one worker process share."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="openenv-git-")
        #: Live envs (and snapshot builders) by folder name: the server serves only these.
        self.workspaces: "weakref.WeakValueDictionary[str, Workspace]" = weakref.WeakValueDictionary()
        self.server = GitHttpServer(self.root, gate=self.gate)
        self.templates = os.path.join(self.root, "git-templates")  # empty: no sample hooks to copy
        os.mkdir(self.templates)
        self.snapshots: dict[str, str] = {}
        #: Task key -> its ``:/message`` revisions' commit ids, resolved right after setup.
        self.pins: dict[str, dict[tuple[str, str], str]] = {}
        #: Task name -> (score, checks passed) of its untouched start state.
        self.start_scores: dict[str, tuple[float, int]] = {}
        self._trash = 0
        self.lock = threading.Lock()
        #: :meth:`empty`'s background deletions (its own lock: :attr:`lock` is held by builds).
        self._deleting: list[threading.Thread] = []
        self._deleting_lock = threading.Lock()
        atexit.register(self.close)

    def gate(self, ident: str) -> Callable[[Callable[[int], subprocess.Popen]], subprocess.Popen] | None:
        """How the git server runs a request for ``<root>/<ident>/``: as that workspace's
        commands run (a live env's: confined; a snapshot builder's: trusted setup) and only
        while one does (:meth:`Workspace.serve`), or refused (None) for anything else, such
        as a finished snapshot."""
        workspace = self.workspaces.get(ident)
        return workspace.serve if workspace is not None else None

    def empty(self, folder: str) -> None:
        """Empty a folder off the caller's path: move its entries out now, delete them in the
        background (one thread: each one takes the GIL from the thread serving steps)."""
        with self.lock:
            self._trash += 1
            trash = os.path.join(self.root, f"trash-{self._trash}")
        os.mkdir(trash)
        for entry in os.scandir(folder):
            os.rename(entry.path, os.path.join(trash, entry.name))
        thread = threading.Thread(target=remove_tree, args=(trash,), daemon=True)
        thread.start()
        with self._deleting_lock:
            self._deleting = [t for t in self._deleting if t.is_alive()] + [thread]

    def settle(self) -> None:
        """Wait for :meth:`empty`'s background deletions to end: for when the disk they hold
        is needed (an agent's command filled it), not on every reset."""
        with self._deleting_lock:
            threads = list(self._deleting)
        for thread in threads:
            thread.join()

    def close(self) -> None:
        self.server.close()
        remove_tree(self.root)


_shared: _Shared | None = None
_shared_lock = threading.Lock()


def shared() -> _Shared:
    """The worker's root folder, git server and snapshots (created on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = _Shared()
        return _shared




class Workspace:
    """One env's folder, and the ways to run commands in it.

    Args:
        limits: Limits of the agent's commands (and of ``command`` checks).
        output_limit: Bytes of output kept per command.
        confine: Hold the agent's commands to :meth:`confinement` (where the kernel has
            Landlock).
        ident: The folder's name under the worker's root (default: a fresh random one).
    """

    def __init__(self, limits: Limits | None = None, output_limit: int = OUTPUT_LIMIT,
                 confine: bool = True, ident: str | None = None) -> None:
        self.shared = shared()
        self.limits = limits or Limits(**LIMITS)
        self.output_limit = output_limit
        self.ident = ident or "e" + uuid.uuid4().hex[:12]
        self.base = os.path.join(self.shared.root, self.ident)
        os.makedirs(self.base, mode=0o700, exist_ok=True)
        self.work = os.path.join(self.base, "work")
        self.remotes = os.path.join(self.base, "remotes")
        self.home = os.path.join(self.base, "home")
        self.tmp = os.path.join(self.base, "tmp")
        #: The Landlock rules of the agent's commands. Built once: reset replaces what is in
        #: the folder, never the folder itself, whose inode the rules name.
        self.ruleset: Ruleset | None = Ruleset(self.confinement()) if confine else None
        #: The ``command``/``unittest`` checks' rules: the same, in a Landlock domain of their
        #: own, so that no process of the agent's (one its git server request left running)
        #: can signal a check's harness or open its key and report pipes in ``/proc``.
        self.check_ruleset: Ruleset | None = Ruleset(self.confinement()) if confine else None
        #: Commands of this env running now: the git server runs its backends only then, and
        #: the backends started for a command end with it (:meth:`serve`).
        self._running = 0
        self._backends: list[subprocess.Popen] = []
        #: The domain of the command running now (an agent's command, or a check's): its
        #: git requests' backends run in it.
        self._serve_ruleset: Ruleset | None = self.ruleset
        self._serve_lock = threading.Lock()
        #: The current task's pinned revisions (the checks' :attr:`CheckContext.pins`).
        self.pins: Mapping[tuple[str, str], str] = {}
        self.shared.workspaces[self.ident] = self

    @property
    def remote_url(self) -> str:
        """Base URL of this env's remotes (``$REMOTE``)."""
        return f"{self.shared.server.url}/{self.ident}/remotes"

    def confinement(self) -> Confinement:
        """What the agent's commands may reach: read the system, the worker's Python and the
        (empty) git templates; write in this env's folder; connect to the git server only
        (no Unix socket: Docker's, a worker's)."""
        python = python_roots()
        return Confinement(read=system_roots() + python.read + (self.shared.templates,),
                           listable=python.listable, write=(self.base,),
                           connect_ports=(self.shared.server.port,),
                           socket_families=(socket.AF_INET, socket.AF_INET6))

    def environ(self) -> dict[str, str]:
        """The environment of every command: HOME with the git identity, no prompts, no pager.

        ``python3`` is the worker's interpreter (its folder comes first on PATH), not a
        version manager's shim that reads the user's home.
        """
        path = os.pathsep.join((os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")))
        return minimal_environ(
            PATH=path, HOME=self.home, TMPDIR=self.tmp, REMOTE=self.remote_url, REMOTES=self.remotes,
            GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", GIT_EDITOR=GIT_EDITOR,
            GIT_SEQUENCE_EDITOR=GIT_SEQUENCE_EDITOR, GIT_PAGER="cat", PAGER="cat", EDITOR="true",
            TERM="dumb", **NO_SANDBOX_FUNCTIONS,
        )

    # -- commands ------------------------------------------------------------------------
    def command(self, command: str, timeout: float, cwd: str | None = None,
                env: Mapping[str, str] | None = None, pass_fds: Sequence[int] = ()) -> ExecResult:
        """Run a shell command under the limits; stdout and stderr merged like a terminal.

        The git server serves this env's remotes while it runs; a request it left running
        (its backend, and what the repository's config made that start) ends with it."""
        return self._serving(command, timeout, cwd, env, pass_fds, self.ruleset)

    def _serving(self, command: str, timeout: float, cwd: str | None,
                 env: Mapping[str, str] | None, pass_fds: Sequence[int],
                 ruleset: Ruleset | None) -> ExecResult:
        """Run a shell command in ``ruleset``'s domain, this env's remotes served meanwhile
        (their backends in that same domain), and end the requests it left running."""
        with self._serve_lock:
            self._running += 1
            self._serve_ruleset = ruleset
        try:
            return self._run_shell(command, timeout, cwd, env, pass_fds, ruleset)
        finally:
            with self._serve_lock:
                self._running -= 1
                backends = [] if self._running else self._backends
                if not self._running:
                    self._backends = []
            for backend in backends:
                if backend.returncode is None:
                    try:
                        os.killpg(backend.pid, signal.SIGKILL)  # its group: not reaped yet
                    except (ProcessLookupError, PermissionError):
                        pass
            for backend in backends:
                try:
                    backend.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    pass  # stuck in the kernel: it runs no code
            if backends:
                reap_orphans()  # what left a backend's group (setsid), re-parented to us

    def _run_shell(self, command: str, timeout: float, cwd: str | None,
                   env: Mapping[str, str] | None, pass_fds: Sequence[int],
                   ruleset: Ruleset | None) -> ExecResult:
        script = f"{self.limits.shell_prefix()}\n{command}"
        return run(lambda gate: ["bash", "-c", gate_line(gate) + script], timeout=timeout,
                   cwd=cwd or self.work, env={**self.environ(), **(env or {})},
                   output_limit=self.output_limit, merge_stderr=True, pass_fds=pass_fds,
                   confine=ruleset, held=True)

    def shell(self, command: str, cwd: str, env: Mapping[str, str] | None = None,
              pass_fds: Sequence[int] = ()) -> ExecResult:
        """A ``command`` or ``unittest`` check: the agent's limits, :data:`SHELL_CHECK_TIMEOUT`, ``env``
        added, in the checks' own Landlock domain (:attr:`check_ruleset`). The env's remotes
        are served to it as to the agent's commands (``git ls-remote origin``), by backends
        in that domain, ended with it."""
        return self._serving(command, SHELL_CHECK_TIMEOUT, cwd, env, pass_fds, self.check_ruleset)

    def serve(self, start: Callable[[int], subprocess.Popen]) -> subprocess.Popen:
        """How the git server starts a backend for this env: confined as its commands are,
        and only while one runs (the backend is ended with it). ``start(gate)`` starts it
        held at ``gate`` (:func:`~openenv_gym.envs._exec.held_start`): it runs programs of
        the agent's config.

        Raises:
            RuntimeError: No command of this env is running (the server answers 503).
        """
        with self._serve_lock:
            if not self._running:
                raise RuntimeError("no command of this env is running")
            ruleset = self._serve_ruleset
            backend = held_start(start, ruleset.spawn_alone if ruleset is not None else None)
            self._backends = [b for b in self._backends if b.returncode is None] + [backend]
            return backend

    def run(self, argv: list[str], cwd: str, timeout: float = 10.0,
            env: Mapping[str, str] | None = None, agent_programs: bool = False) -> ExecResult:
        """Run the checks' plumbing (git, without a shell), confined like the agent's commands:
        the repository is the agent's.

        Args:
            argv: The command.
            cwd: Its working directory.
            timeout: Wall-clock seconds.
            env: Variables added to :meth:`environ` (the checks' git settings).
            agent_programs: The call can run programs the repository's config names (``git
                status`` runs a clean filter): that is the agent's code, so it runs under the
                agent's limits, set by a ``ulimit`` prefix before git starts. A bash start per
                call, so only there: the checks' other git calls run none (tested).
        """
        command: list[str] | Callable[[int], list[str]] = argv
        if agent_programs:
            script = f'{self.limits.shell_prefix()}\nexec "$@"'
            command = lambda gate: ["bash", "-c", gate_line(gate) + script, "bash", *argv]  # noqa: E731
        return run(command, timeout=timeout, cwd=cwd, env={**self.environ(), **(env or {})},
                   output_limit=1 << 20, confine=self.ruleset, held=agent_programs)

    # -- snapshots -----------------------------------------------------------------------
    def restore(self, task: Task | None) -> None:
        """Make this env's folder the task's start state (free-form: empty + origin.git).

        Raises:
            TaskSetupError: Building the task's snapshot failed.
        """
        key = task.key if task is not None else ""
        os.chmod(self.base, 0o700)  # the agent may have changed it; the worker owns it
        # Emptied first: a task's first snapshot is built on the disk the agent's files hold.
        self.shared.empty(self.base)  # the folder stays: the ruleset names it
        snapshot = self._snapshot(task)
        self.pins = self.shared.pins.get(key, {})
        try:
            shutil.copytree(snapshot, self.base, symlinks=True, dirs_exist_ok=True)
        except OSError:  # shutil.Error too: it lists each file's (ENOSPC) error
            # The agent's command filled the disk, and its files' deletion (in the background,
            # for a fast reset) has not freed it yet: wait for that, then copy again onto an
            # empty folder. A second failure is a real one.
            self.shared.settle()
            empty_folder(self.base)
            shutil.copytree(snapshot, self.base, symlinks=True, dirs_exist_ok=True)
        old = f"/{os.path.basename(snapshot)}/"  # the builder's folder name, in its URLs
        new = f"/{self.ident}/"
        for top in (self.work, self.remotes):
            for entry in os.scandir(top):
                config = os.path.join(entry.path, ".git", "config")
                if not os.path.exists(config):
                    config = os.path.join(entry.path, "config")  # a bare repo
                if os.path.isfile(config):
                    with open(config, encoding="utf-8", errors="surrogateescape") as f:
                        text = f.read()
                    if old in text:
                        with open(config, "w", encoding="utf-8", errors="surrogateescape") as f:
                            f.write(text.replace(old, new))

    def _snapshot(self, task: Task | None) -> str:
        key = task.key if task is not None else ""
        with self.shared.lock:
            path = self.shared.snapshots.get(key)
            if path is None:
                # Setup needs disk: let the deleted files free theirs first (once per task).
                self.shared.settle()
                path, self.shared.pins[key] = self._build(task, key)
                self.shared.snapshots[key] = path
            return path

    def _build(self, task: Task | None, key: str) -> tuple[str, dict[tuple[str, str], str]]:
        """Run the task's setup in a fresh folder: its path, and the checks' pinned revisions."""
        # Setup is trusted (it comes from a task file): unconfined, only a generous time
        # limit. While the builder lives the git server serves its pushes, to anyone who
        # names its folder: another env's command on this worker, running meanwhile, pushed
        # refs into a snapshot named after its task, and every later episode of the task
        # started with them. So its name is a random one, as an env's own folder's.
        builder = Workspace(replace(self.limits, cpu_seconds=None, processes=None), 1 << 20,
                            confine=False)
        for folder in (builder.work, builder.remotes, builder.home, builder.tmp):
            os.makedirs(folder, mode=0o700)
        # A path in it is bytes to git: one that is not UTF-8 (TMPDIR) is written back as it was.
        with open(os.path.join(builder.home, ".gitconfig"), "w", encoding="utf-8",
                  errors="surrogateescape") as f:
            f.write(GITCONFIG.format(templates=self.shared.templates))
            if shutil.which("vimdiff", path=builder.environ()["PATH"]):
                f.write(MERGETOOL_CONFIG)
        script = (task.setup_script() if task is not None
                  else SETUP_PRELUDE + 'git init -q --bare "$REMOTES/origin.git"\n')
        # Fewer files make every restore faster: pack each repo's loose objects.
        script += (f'\nfor r in {shlex.quote(builder.remotes)}/*.git {shlex.quote(builder.work)}/*/.git; do\n'
                   '  [ -d "$r" ] && git --git-dir="$r" repack -adq && git --git-dir="$r" prune-packed\n'
                   'done; true\n')
        try:
            result = builder.command(script, SETUP_TIMEOUT)
        finally:
            self.shared.workspaces.pop(builder.ident, None)  # a finished snapshot is served to no one
        if result.exit_code != 0:
            shutil.rmtree(builder.base, ignore_errors=True)
            raise TaskSetupError(f"setup of git task {key!r} failed (exit {result.exit_code}):\n"
                                 f"{result.stdout[-4000:]}")
        try:
            # Before any agent acts: the checks compare with these ids, not message searches.
            pins = pin_revs(builder, task) if task is not None else {}
        except ValueError as e:
            shutil.rmtree(builder.base, ignore_errors=True)
            raise TaskSetupError(f"setup of git task {key!r}: {e}") from None
        return builder.base, pins

    def close(self) -> None:
        """Remove this env's folder."""
        for ruleset in (self.ruleset, self.check_ruleset):
            if ruleset is not None:
                ruleset.close()
        remove_tree(self.base)
