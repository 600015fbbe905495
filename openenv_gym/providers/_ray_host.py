"""The actor side of a ray worker: :class:`ServerHost` owns one env server on its node.

It runs inside a Ray worker process on whichever node Ray picked, and starts the env server
there as its own child process (or a hardened container, through the Docker provider, whose
Unix socket a small TCP relay exposes). The trainer's side is :mod:`openenv_gym.providers.ray`.
"""

from __future__ import annotations

import collections
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Any

import ray

from openenv_gym.errors import WorkerError
from openenv_gym.protocol.startup import env_kwargs_from_json, parse_ready, server_argv
from openenv_gym.providers.base import startup_error, terminate

__all__ = ["ACTOR_NAME_PREFIX", "ServerHost", "actor_name"]

#: Start of the name of every actor our workers run in. The GCS's actor table reports an
#: actor's name (not its module or namespace): this tells ours from a user's actor that
#: happens to be a class named ``ServerHost`` too.
ACTOR_NAME_PREFIX = "openenv-gym-worker-"


def actor_name(pool: str, index: int) -> str:
    """A name for the actor of worker ``index`` of ``pool``, unique in the cluster: a
    restart's actor is made while Ray may not have released the name of the one it replaces,
    and pools of other processes may share the pool's name."""
    return f"{ACTOR_NAME_PREFIX}{pool}-{index}-{secrets.token_hex(6)}"


class ServerHost:
    """The actor side of a worker: owns one env server process on its node.

    Runs inside a Ray worker process. The server watches this actor's pid
    (``--owner-pid``), so it exits within a fraction of a second when the actor is killed
    or its node goes away, even by SIGKILL.

    With ``isolation="docker"`` it starts a hardened container on its node through the
    Docker provider instead; that container serves on a Unix socket (``network_mode="none"``),
    which a small TCP relay in this actor exposes to the trainer.

    Args:
        env: Catalog name.
        kwargs_json: Env keyword arguments as JSON.
        host: Interface to bind (``"127.0.0.1"``, or ``"node"`` for the node's IP).
        isolation: ``"process"`` (a child process) or ``"docker"`` (a hardened container).
        docker_options: Keyword arguments for :class:`~openenv_gym.providers.docker.DockerProvider`.
        cgroups: With ``isolation="process"``, an untrusted env's server gets a cgroup
            (:func:`openenv_gym.providers._cgroup.for_env`) where the node allows it.
        private_tmp: With ``isolation="process"``, an untrusted env's server gets a private
            tmpfs as its temp folder (:func:`openenv_gym.providers._tmpfs.spec_for_env`).
        idle_timeout: Seconds after which the server closes a session nobody calls (None:
            never; :attr:`~openenv_gym.providers.base.Provider.idle_timeout`).
    """

    def __init__(self, env: str, kwargs_json: str, host: str, isolation: str = "process",
                 docker_options: dict[str, Any] | None = None, cgroups: bool = True,
                 private_tmp: bool = True, idle_timeout: float | None = None) -> None:
        self.env = env
        self.idle_timeout = idle_timeout
        self.kwargs_json = kwargs_json
        self.host = ray.util.get_node_ip_address() if host == "node" else host
        self.isolation = isolation
        self.docker_options = dict(docker_options or {})
        self.container: Any = None
        self.relay: _TcpRelay | None = None
        self.proc: subprocess.Popen | None = None
        self.lines: collections.deque[str] = collections.deque(maxlen=200)
        self.address: str | None = None
        self.local_address: str | None = None
        self.folder: str | None = None
        self.cgroups = cgroups
        self.private_tmp = private_tmp
        self.cgroup: Any = None
        self._ready = threading.Event()

    def start(self, timeout: float) -> dict[str, Any]:
        """Start the server and wait until it serves.

        Returns:
            ``address`` (TCP), ``local_address`` (the Unix socket on this node),
            ``node_id``, ``node_ip``, ``actor_pid``, ``server_pid``.
        """
        if self.isolation == "docker":
            return self._start_container()
        from openenv_gym.providers._runtime import MAX_SOCKET_PATH, remove_orphaned_folders, worker_environ

        # A private folder for the Unix socket, named by this actor's pid: Ray kills an
        # actor's children with it, so a lost actor's server cannot remove it; the next
        # server started on the node does.
        remove_orphaned_folders(tempfile.gettempdir(), _FOLDER_PREFIX)
        self.folder = tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-")
        sock = os.path.join(self.folder, "worker.sock")
        # A socket path longer than the kernel takes (a long TMPDIR) would fail the bind and
        # so the worker: serve TCP alone then.
        unix = len(os.fsencode(sock)) <= MAX_SOCKET_PATH
        from openenv_gym.providers import _cgroup, _tmpfs

        # The same hardening overrides as a container's (``docker_options["container_options"]``).
        overrides = self.docker_options.get("container_options")
        tmpfs = _tmpfs.spec_for_env(self.env, overrides) if self.private_tmp else None
        if tmpfs:
            os.mkdir(os.path.join(self.folder, "tmp"), 0o700)
        cmd = [sys.executable, "-m", "openenv_gym.server",
               *server_argv(self.env, self.kwargs_json, unix=sock if unix else None, tcp_port=0,
                            host=self.host, owner_pid=os.getpid(),
                            owner_dir=self.folder if unix else None,
                            private_tmp=(os.path.join(self.folder, "tmp"), tmpfs) if tmpfs else None,
                            idle_timeout=self.idle_timeout)]

        # As on the process provider: an untrusted env's server gets Docker's pids and
        # memory limits, and stopping it ends whatever it left. Ray kills an actor's
        # children with it, so a lost actor's server cannot remove its own cgroup: the next
        # server started on the node does.
        _cgroup.reap_stale()
        self.cgroup = (_cgroup.for_env(self.env, f"ray-{os.path.basename(self.folder)}", overrides)
                       if self.cgroups else None)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     env=worker_environ())
        if self.cgroup is not None:
            try:
                self.cgroup.place(self.proc)
            except WorkerError:
                self.stop()  # the cgroup and the socket folder too
                raise
        threading.Thread(target=self._pump, daemon=True).start()
        if not self._ready.wait(timeout) or self.address is None:
            try:  # its output ended: it is exiting, give it a moment to say with what code
                code = self.proc.wait(2.0) if self._ready.is_set() else None
            except subprocess.TimeoutExpired:
                code = None
            self.stop()
            where = f"on node {ray.util.get_node_ip_address()}"
            if code is not None:
                raise startup_error(f"env server for {self.env!r} exited during startup (code {code}) "
                                    f"{where}", self.logs())
            raise WorkerError(f"env server for {self.env!r} did not start within {timeout:.0f} s "
                              f"{where}.\n{self.logs()}")
        ctx = ray.get_runtime_context()
        return {"address": self.address, "local_address": self.local_address, "node_id": ctx.get_node_id(),
                "node_ip": ray.util.get_node_ip_address(), "actor_pid": os.getpid(),
                "server_pid": self.proc.pid}

    def _start_container(self) -> dict[str, Any]:
        from openenv_gym.providers.docker import DockerProvider

        docker = DockerProvider(**self.docker_options)
        docker.idle_timeout = self.idle_timeout
        [self.container] = docker.start(self.env, 1, env_kwargs_from_json(self.kwargs_json))
        self.relay = _TcpRelay(self.host, self.container.address)
        self.address = self.relay.address
        return {"address": self.address, "local_address": self.container.address,
                "node_id": ray.get_runtime_context().get_node_id(),
                "node_ip": ray.util.get_node_ip_address(), "actor_pid": os.getpid(),
                "server_pid": 0, "container_id": self.container.container_id}

    def _pump(self) -> None:
        # A pipe, not a log file: nothing is left behind on the node when the actor dies.
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            self.lines.append(line)
            ready = parse_ready(line)
            if ready and self.address is None:
                first, also = ready
                for found in ([first] if first else []) + also:
                    if found.startswith("unix://"):
                        self.local_address = found
                    else:
                        self.address = found
                self._ready.set()
        self._ready.set()  # the server exited: stop waiting

    def alive(self, grace: float = 0.1) -> bool:
        """Whether the server process runs.

        Callers ask right after a call failed; a process killed a moment ago may still be
        tearing down, so give it ``grace`` seconds to finish dying before calling it alive.
        """
        if self.container is not None:
            return bool(self.container.alive())
        if self.proc is None:
            return False
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            return True
        return False

    def logs(self, tail: int = 50) -> str:
        """The server's last output lines."""
        if self.container is not None:
            return str(self.container.logs(tail))
        return "\n".join(list(self.lines)[-tail:])

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 2 s) or remove its container."""
        if self.relay is not None:
            self.relay.close()
        if self.container is not None:
            self.container.stop()
        if self.proc is not None:
            terminate(self.proc)
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


#: Socket folders of ray workers: ``<tmp>/openenv-ray-<actor pid>-<random>``.
_FOLDER_PREFIX = "openenv-ray-"


class _TcpRelay:
    """Forwards TCP connections on ``host`` to a Unix socket (a container's, on this node).

    Bytes are copied as they come; framing stays end to end between client and server.
    """

    def __init__(self, host: str, target: str) -> None:
        import socket

        self.target = target[len("unix://"):]
        self.listener = socket.create_server((host, 0))
        self.address = f"tcp://{host}:{self.listener.getsockname()[1]}"
        self._conns: list[Any] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()  # the container is gone: the client sees a closed connection
                continue
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._copy, args=(a, b), daemon=True).start()

    @staticmethod
    def _copy(src: Any, dst: Any) -> None:
        import socket

        try:
            while data := src.recv(1 << 20):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.listener.close()
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass
