"""The ``process`` provider, the embedded default: each worker is a local subprocess.

Workers serve on a Unix socket in a private temporary folder, log to a file beside it,
and never outlive their owner: they watch the owner's pid (which also covers an owner
killed with SIGKILL) and an ``atexit`` hook stops them on a normal exit. An untrusted
env's worker also gets, where this machine allows it (root), a cgroup of its own with
Docker's pids and memory limits, so that stopping it ends every process it left
(:mod:`openenv_gym.providers._cgroup`), and a private tmpfs of the containers' ``/tmp`` size
for its sandboxes (:mod:`openenv_gym.providers._tmpfs`).

Example:
    >>> provider = ProcessProvider()
    >>> [worker] = provider.start("echo")
    >>> worker.address.startswith("unix://")
    True
    >>> worker.stop(); worker.alive()
    False
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping
from typing import Any

from openenv_gym.catalog import get_env_info
from openenv_gym.protocol.startup import server_argv
from openenv_gym.providers import _cgroup, _forks, _tmpfs
from openenv_gym.providers._docker_owner import stat_fields
from openenv_gym.providers._runtime import (
    OWNER_FILE,
    check_socket_path,
    make_owned_folder,
    python_command,
    remove_folder,
    runtime_dir,
    worker_environ,
)
from openenv_gym.errors import InvalidRequestError
from openenv_gym.providers.base import (
    Provider, Worker, check_flags, checked_startup_timeout, env_kwargs_json, terminate, track, untrack,
    wait_ready,
)

__all__ = ["ProcessProvider", "ProcessWorker", "frozen"]

#: What a worker in these ``/proc/<pid>/stat`` states is: alive, but running nothing (so
#: answering nothing) until resumed.
_FROZEN = {
    "T": "stopped (SIGSTOP: frozen, it answers nothing)",
    "t": "stopped by a debugger (ptrace: frozen, it answers nothing)",
}


def _process_state(pid: int) -> str:
    """The state letter of ``pid`` in ``/proc/<pid>/stat`` (``"R"``, ``"S"``, ``"T"``...), or
    ``""`` when it cannot be read (gone, no /proc)."""
    try:
        return stat_fields(pid)[0].decode()
    except (OSError, IndexError):
        return ""


def frozen(pid: int) -> str:
    """Why process ``pid`` runs nothing until continued (SIGSTOP, Ctrl-Z, a debugger), or
    ``""`` when it runs (or is gone).

    Example:
        >>> import os
        >>> frozen(os.getpid())
        ''
    """
    return _FROZEN.get(_process_state(pid), "")


class ProcessWorker(Worker):
    """An env server in a local subprocess.

    Args:
        env: Catalog name.
        env_kwargs: JSON-serializable env keyword arguments.
        folder: Where its socket and log live.
        name: File-name stem (``"w0"``).
        startup_timeout: Seconds to wait for it to serve.
        cgroups: Give an untrusted env's worker a cgroup (:func:`~openenv_gym.providers._cgroup.for_env`).
        private_tmp: Give an untrusted env's worker a private tmpfs as its temp folder
            (:func:`~openenv_gym.providers._tmpfs.spec_for_env`).
        container_options: Overrides of the hardening defaults for those two (``pids_limit``,
            ``mem_limit``, ``tmpfs["/tmp"]``), as the docker provider takes them.
        fork: Fork it from the fork server (:mod:`openenv_gym.providers._forks`) where this
            machine allows, instead of spawning a new interpreter.
    """

    def __init__(self, env: str, env_kwargs: dict[str, Any], folder: str, name: str,
                 startup_timeout: float = 60.0, cgroups: bool = True, private_tmp: bool = True,
                 container_options: dict[str, Any] | None = None, fork: bool = True,
                 idle_timeout: float | None = None) -> None:
        self._kwargs_json = env_kwargs_json(env_kwargs)
        self.idle_timeout = idle_timeout
        self.env = env
        self.folder = folder
        self.socket_path = os.path.join(folder, f"{name}.sock")
        check_socket_path(self.socket_path)
        self.log_path = os.path.join(folder, f"{name}.log")
        self._log_start = 0  # where this start's output begins in the log (see _spawn)
        self.address = f"unix://{self.socket_path}"
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | _forks.ForkedProcess | None = None
        self.fork = fork
        pool = os.path.basename(folder).split("-", 1)[-1]  # the folder is "<owner pid>-<pool>"
        self.tmp_path = os.path.join(folder, f"{name}.tmp")
        self._lock = threading.Lock()
        #: The worker's cgroup, or None.
        self.cgroup: _cgroup.WorkerCgroup | None = None
        #: Docker's /tmp tmpfs spec for the worker's private temp folder, or None.
        self.tmpfs: str | None = None
        try:
            # From the cgroup's creation on, a failure or a Ctrl-C (the tmpfs check's first
            # run waits on a subprocess) must remove it: no stop() would otherwise.
            self.cgroup = _cgroup.for_env(env, f"{pool}-{name}", container_options) if cgroups else None
            self.tmpfs = _tmpfs.spec_for_env(env, container_options) if private_tmp else None
            self._spawn()
        except BaseException:
            self.stop()  # one that did not serve in time still runs: end it, and its cgroup
            raise
        track(self)

    def _spawn(self) -> None:
        # Again on a restart: the folder may have gone meanwhile (rm -rf /tmp/*, a tmp
        # cleaner), and the log opened in it would fail every restart from then on.
        make_owned_folder(self.folder)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        # The log keeps every start's output; an error about this start quotes this start's
        # (a failed restart's tail held the same traceback once per attempt).
        self._log_start = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        private_tmp, tmpdir = None, None
        untrusted = get_env_info(self.env).untrusted
        if self.tmpfs:
            os.makedirs(self.tmp_path, mode=0o700, exist_ok=True)  # the mount point (empty here)
            private_tmp = (self.tmp_path, self.tmpfs)
        elif untrusted:
            # No tmpfs (not root): the sandboxes still live in the worker's folder, not loose
            # in $TMPDIR, so a worker that dies without cleaning up (SIGKILL, the OOM killer,
            # a stop past its grace) leaves nothing that outlives its pool: stop() and the
            # sweep of dead owners' folders remove them. What a crashed worker left goes now.
            remove_folder(self.tmp_path)
            os.makedirs(self.tmp_path, mode=0o700, exist_ok=True)
            tmpdir = self.tmp_path
        argv = server_argv(self.env, self._kwargs_json, unix=self.socket_path, owner_pid=os.getpid(),
                           owner_dir=self.folder, private_tmp=private_tmp, tmpdir=tmpdir,
                           idle_timeout=self.idle_timeout)
        environ = worker_environ(trainer_path=True)  # started with python_command()'s -P
        # Into its cgroup before it runs anything: a forked worker is held until then; a
        # spawned one spends that time starting Python.
        place = self.cgroup.place if self.cgroup is not None else None
        self.proc = _forks.spawn(argv, self.log_path, environ, place, untrusted) if self.fork else None
        if self.proc is None:
            with open(self.log_path, "ab") as log:
                # A session of its own: Ctrl-C in the trainer's terminal does not kill workers
                # mid-step; the trainer closes them, or they notice the owner is gone.
                self.proc = subprocess.Popen([*python_command(), "-m", "openenv_gym.server", *argv],
                                             stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True,
                                             env=environ)
            if place is not None:
                place(self.proc)
        wait_ready(self.address, self.startup_timeout, self.alive, lambda: self.logs())

    @property
    def pid(self) -> int | None:
        """The worker's process id."""
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_reason(self) -> str:
        """Why the worker stopped (``"killed by signal 9 (SIGKILL)"``), or why it answers
        nothing while it still runs (``"stopped (SIGSTOP: ...)"``); ``""`` while it serves."""
        proc = self.proc
        if proc is None:
            return ""
        # Read before the poll: a process still there after the read was the one read (its
        # pid cannot have been reused), so the state cannot be a newcomer's.
        state = _process_state(proc.pid)
        code = proc.poll()
        if code is None:
            return _FROZEN.get(state, "")
        if getattr(proc, "status_lost", False):
            return "exited (its exit status was lost with the fork server that started it)"
        if code < 0:
            try:
                return f"killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"

    def _note_exit(self) -> None:
        if self.proc is not None and not self.exit_reason():
            # Its connection closes as it dies, a moment before its exit status can be read:
            # a worker whose death a call just saw would pass for one replaced while running.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.2)
        super()._note_exit()

    def restart(self) -> None:
        with self._lock:
            self._note_exit()
            self._terminate()
            self.restarts += 1
            self._spawn()

    def _terminate(self) -> None:
        try:
            if self.proc is not None:
                # A stopped worker (SIGSTOP) would act on the SIGTERM only once resumed: the
                # grace would pass and SIGKILL end it uncleanly. Resumed, it stops as a running
                # one does. To a running worker SIGCONT is nothing (the kernel drops it).
                self.proc.send_signal(signal.SIGCONT)
                terminate(self.proc)
        finally:  # also when interrupted: the worker got its SIGKILL, clear what it leaves
            if self.cgroup is not None:
                self.cgroup.kill()  # what the worker left: daemons, or a crashed worker's children
            if os.path.exists(self.socket_path):
                os.unlink(self.socket_path)

    def stop(self) -> None:
        try:
            with self._lock:
                self._terminate()  # the cgroup emptied too
                self.proc = None
                if self.cgroup is not None:
                    self.cgroup.remove()
                    self.cgroup = None
        finally:
            # Also when interrupted (Ctrl-C in the SIGTERM grace: terminate() SIGKILLed the
            # worker then): a worker that is gone leaves the at-exit list. The wait only
            # reaps a just-killed one; a worker that still runs (not signalled) stays listed.
            try:
                if self.proc is not None:
                    self.proc.wait(1.0)
                untrack(self)
            except subprocess.TimeoutExpired:
                pass

    def logs(self, tail: int = 50) -> str:
        """The last lines this start of the worker wrote to its log (the file keeps those of
        earlier starts too), and a line for processes its cgroup OOM-killed."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_start)
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            lines = []
        oom = self.cgroup.oom_kills() if self.cgroup is not None else 0
        if oom:  # the kernel says nothing in the worker's own log
            limit = self.cgroup.limit("memory") or 0
            lines.append(f"[openenv-gym] the worker's cgroup OOM-killed {oom} process(es) at its memory limit "
                         f"({limit >> 20} MiB): raise provider_options={{'container_options': "
                         "{'mem_limit': ...}}")
        return "\n".join(lines[-tail:])


class ProcessProvider(Provider):
    """Starts workers as local subprocesses (no isolation beyond the OS user and, for
    untrusted envs, Landlock, a cgroup and a private tmpfs where the machine has them).

    Args:
        startup_timeout: Seconds each worker may take to start serving.
        cgroups: Give an untrusted env's worker a cgroup with the Docker provider's pids and
            memory limits (``pids_limit``, ``mem_limit`` of the hardening defaults and the
            env's catalog overrides), where this machine allows it. False: never.
        private_tmp: As root, give an untrusted env's worker a temp folder of its own: a
            tmpfs the size of the containers' ``/tmp`` (64 MiB), in a mount namespace only it
            sees, so its sandboxes cannot fill the disk. False: never.
        container_options: Overrides of those limits, with the docker provider's keys and
            meaning (``{"mem_limit": "4g", "pids_limit": 256, "tmpfs": {"/tmp": "size=1g"}}``),
            so the same ``provider_options`` serve both providers; other keys are ignored.
        fork: Start workers by forking them from a fork server that has already imported
            the worker code (started on first use, one per trainer; tens of milliseconds per
            worker instead of ~0.3 s), where the machine has pidfds (Linux 5.3+). False: spawn
            a fresh interpreter for every worker.
    """

    name = "process"

    def __init__(self, startup_timeout: float = 60.0, cgroups: bool = True, private_tmp: bool = True,
                 container_options: dict[str, Any] | None = None, fork: bool = True) -> None:
        self.startup_timeout = checked_startup_timeout(startup_timeout)
        check_flags(cgroups=cgroups, private_tmp=private_tmp, fork=fork)
        if container_options is not None and not isinstance(container_options, Mapping):
            # dict("x") said only "dictionary update sequence element #0 has length 1"
            raise InvalidRequestError(f"provider_options['container_options'] must be a mapping of "
                                      f"the docker provider's container options (such as "
                                      f"{{'mem_limit': '2g'}}), got {container_options!r}")
        self.cgroups = cgroups
        self.private_tmp = private_tmp
        self.container_options = dict(container_options or {})
        self.fork = fork

    @staticmethod
    def _pool_folder(pool: str) -> str:
        """The folder a pool's workers share (sockets, logs), under the runtime folder."""
        return os.path.join(runtime_dir(), f"{os.getpid()}-{pool}")

    def _start_one(self, env: str, env_kwargs: dict[str, Any], index: int, pool: str) -> Worker:
        folder = self._pool_folder(pool)
        make_owned_folder(folder)
        try:
            return ProcessWorker(env, env_kwargs, folder, f"w{index}", self.startup_timeout, self.cgroups,
                                 self.private_tmp, self.container_options, self.fork,
                                 self.idle_timeout)
        except BaseException:
            # The error carries the log tail; leave no file behind, nor the folder if empty.
            for leftover in (f"w{index}.log", f"w{index}.sock"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, leftover))
            remove_folder(os.path.join(folder, f"w{index}.tmp"))  # an untrusted env's temp folder
            # The pool's folder stays for its other starts, which may be opening their logs
            # there now: _start_all removes it once every start has ended.
            raise

    def _start_all(self, env: str, n: int, kwargs: dict[str, Any], pool: str) -> list[Worker]:
        try:
            return super()._start_all(env, n, kwargs, pool)
        except BaseException:
            # Every start has ended, and the started workers' stop removed their files.
            folder = self._pool_folder(pool)
            with contextlib.suppress(OSError):
                if os.listdir(folder) == [OWNER_FILE]:  # no worker of the pool in it
                    os.unlink(os.path.join(folder, OWNER_FILE))
                os.rmdir(folder)
            raise

    def stop_all(self, workers: Any) -> None:
        try:
            super().stop_all(workers)
        finally:  # an interrupted close() runs the finalizer once: nothing else removes them
            for folder in {w.folder for w in workers if isinstance(w, ProcessWorker)}:
                shutil.rmtree(folder, ignore_errors=True)
