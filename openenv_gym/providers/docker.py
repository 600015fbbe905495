"""The ``docker`` provider: each worker is an env server in a hardened container.

A drop-in for the ``process`` provider: ``gym.make("OpenEnv/Echo-v0", provider="docker")``.
The container runs ``python -m openenv_gym.server ENV --unix /run/openenv/worker.sock``; the
socket lives in a host folder bind-mounted into the container, so the server is reachable
with ``network_mode="none"`` and without docker-proxy. The container runs with the
hardening defaults of :mod:`openenv_gym.providers._docker_hardening`, carries ownership
labels (:mod:`openenv_gym.providers._docker_owner`) and is removed by ``close()``, at exit,
or by the owner's watchdog once the owner is gone. A missing image is built on first use
(:mod:`openenv_gym.providers._docker_images`) unless ``auto_build=False``.

Example:
    >>> import gymnasium as gym, openenv_gym
    >>> env = gym.make("OpenEnv/Echo-v0", provider="docker",
    ...                provider_options={"container_options": {"mem_limit": "512m"}})
    >>> obs, info = env.reset(seed=0)
    >>> env.close()                       # the container is removed
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from typing import Any, Mapping, Sequence

from openenv_gym._lazy import import_or_undo
from openenv_gym.catalog import EnvInfo, get_env_info
from openenv_gym.errors import InvalidRequestError, OpenEnvError, ProviderUnavailableError
from openenv_gym.protocol.startup import server_argv
from openenv_gym.providers import _docker_owner as owner
from openenv_gym.providers._docker_hardening import container_options, with_own_uid
from openenv_gym.providers._docker_images import build_image, build_problem, env_code_missing, find_image
from openenv_gym.providers.base import (
    Provider, Worker, check_flags, checked_startup_timeout, env_kwargs_json, track, untrack, wait_ready,
)
from openenv_gym.providers._runtime import (OWNER_FILE, check_socket_path, make_owned_folder,
                                           remove_folder, runtime_dir)

__all__ = ["DockerProvider", "DockerWorker", "SOCKET_DIR"]

logger = logging.getLogger("openenv_gym.docker")

#: Where the socket folder is mounted inside a worker container.
SOCKET_DIR = "/run/openenv"
_SOCKET_NAME = "worker.sock"

_reaped: list[bool] = []

#: A container's exit code when its init (or the worker it waits for) ended by SIGKILL.
_SIGKILL_EXIT = 128 + 9

#: A container's exit code when the socket folder mounted in it is not the one this process
#: made (empty, without its :data:`~openenv_gym.providers._runtime.OWNER_FILE`): the engine
#: resolved the bind mount's path in a file system of its own and made a folder of that name.
_FOLDER_UNSEEN_EXIT = 65

#: Trainer variables that pick numeric kernels or hashing: OpenBLAS's core type and threads,
#: MKL's and OpenMP's, numpy's CPU features, Python's hash seed. A process worker inherits
#: them with the trainer's environment; a container gets them too, or the same seed and
#: actions can give results that differ in their last bits between the two providers
#: (``OPENBLAS_CORETYPE=Haswell`` on the host, SkylakeX kernels in the container).
NUMERICS_ENV = (("OPENBLAS_", "MKL_", "OMP_", "NPY_"), ("PYTHONHASHSEED",))


def with_numerics_environment(options: dict[str, Any],
                              environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``options`` with the trainer's :data:`NUMERICS_ENV` variables in its ``environment``
    (those the caller's ``environment`` sets win)."""
    environ = os.environ if environ is None else environ
    prefixes, names = NUMERICS_ENV
    inherited = {k: v for k, v in environ.items() if k.startswith(prefixes) or k in names}
    if not inherited:
        return options
    given = options.get("environment") or {}
    if isinstance(given, Mapping):
        options["environment"] = {**inherited, **given}
    else:  # docker-py's other form: ["NAME=value", ...]
        named = {str(item).split("=", 1)[0] for item in given}
        options["environment"] = [f"{k}={v}" for k, v in inherited.items() if k not in named] + list(given)
    return options


def _check_utf8(folder: str) -> None:
    # The engine's API is JSON: a bind-mount source that is not UTF-8 arrives mangled, and the
    # engine makes a folder of that other name (root's) for the worker, which cannot serve in it.
    try:
        os.fsencode(folder).decode("utf-8")
    except UnicodeDecodeError:
        raise ProviderUnavailableError(
            f"the runtime folder {folder!r} is not valid UTF-8, and the Docker engine takes only "
            "UTF-8 paths; set TMPDIR to a folder whose path is UTF-8 (such as /tmp), or use "
            "provider='process'") from None
    if ":" in folder:
        # A bind mount is written "source:target:mode": the engine refused the worker's with
        # "invalid volume specification", which read as a container option's fault.
        raise ProviderUnavailableError(
            f"the runtime folder {folder!r} holds a ':', which the Docker engine's bind mounts "
            "cannot take; set TMPDIR to a folder without one (such as /tmp), or use "
            "provider='process'")


def _unix_time(stamp: Any) -> str | None:
    """The engine's RFC 3339 UTC time (``"2026-12-07T16:05:54.931005913Z"``) as the Unix
    time its events API takes (``"1796659554.931005913"``: it ignores RFC 3339 there), or
    None for another form."""
    import calendar

    match = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z", str(stamp))
    if match is None:
        return None
    seconds = calendar.timegm(tuple(int(g) for g in match.groups()[:6]) + (0, 0, 0))
    return f"{seconds}{match.group(7) or ''}"


def _connect_unix(host: str) -> None:
    """Connect to the engine's Unix socket ``host`` (``unix:///var/run/docker.sock``) and
    close the connection again; nothing for another kind of address.

    Raises:
        OSError: It takes no connection (no such file, nobody listening).
    """
    scheme, sep, path = host.partition("://")
    if not sep or scheme not in ("unix", "http+unix"):
        return
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect("/" + path.lstrip("/"))  # as docker-py reads it


class DockerWorker(Worker):
    """An env server in a container, reached through a Unix socket in a mounted folder.

    Args:
        client: A ``docker.DockerClient``.
        env: Catalog name.
        env_kwargs: JSON-serializable env keyword arguments.
        image: Image tag (present locally).
        folder: Host folder mounted at :data:`SOCKET_DIR`.
        name: Container name.
        labels: Ownership labels.
        run_options: Hardening and limits for ``containers.run``.
        startup_timeout: Seconds to wait for the server to serve.
    """

    def __init__(self, client: Any, env: str, env_kwargs: dict[str, Any], image: str, folder: str,
                 name: str, labels: dict[str, str], run_options: dict[str, Any],
                 startup_timeout: float = 60.0, idle_timeout: float | None = None) -> None:
        kwargs_json = env_kwargs_json(env_kwargs)
        self.client = client
        self.env = env
        self.image = image
        self.folder = folder
        self.name = name
        self.labels = labels
        # A uid of its own: RLIMIT_NPROC budgets are per uid machine-wide (with_own_uid).
        self.run_options = with_own_uid(run_options)
        self.startup_timeout = startup_timeout
        self.socket_path = os.path.join(folder, _SOCKET_NAME)
        check_socket_path(self.socket_path)
        self.address = f"unix://{self.socket_path}"
        # umask 0: the socket must be connectable by the host user, whose uid differs from
        # the container's; the folder's parent (0700, the host user's) keeps others out.
        # An empty socket folder is one the engine made, not ours (it holds the owner file):
        # the server failed in it on a bare PermissionError. One it may not list (SELinux)
        # is left to the server's error.
        self.command = ["sh", "-c", f'[ -e {SOCKET_DIR}/{OWNER_FILE} ] || [ -n "$(ls -A {SOCKET_DIR} 2>&1)" ] '
                        f'|| exit {_FOLDER_UNSEEN_EXIT}; umask 000 && exec "$@"', "sh",
                        "python", "-m", "openenv_gym.server",
                        *server_argv(env, kwargs_json, unix=f"{SOCKET_DIR}/{_SOCKET_NAME}",
                                     idle_timeout=idle_timeout)]
        self.container: Any = None
        #: The current container's ``State.StartedAt`` as this worker started it: a later one
        #: means the engine started it again (``docker restart``, a restart policy).
        self._started_at: str | None = None
        #: Per container id and ``FinishedAt``: whether the engine's SIGKILL ended it (see
        #: :meth:`_killed_by_engine`), kept once known as the engine's event log is short.
        self._engine_kills: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()
        self._spawn()
        track(self)

    @property
    def container_id(self) -> str | None:
        """The current container's id (changes on :meth:`restart`)."""
        return self.container.id if self.container is not None else None

    def _spawn(self) -> None:
        # Again on a restart: the folder may have gone meanwhile (rm -rf /tmp/*, a tmp
        # cleaner) while the old container served from its mount, and every restart would
        # fail on it from then on (the process provider's workers make theirs again too).
        make_owned_folder(self.folder)
        # The container's user (another uid) creates its socket here; once it serves, the
        # folder is closed to writes (below): it is on the host's disk, with no size limit.
        os.chmod(self.folder, 0o777)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        import docker.errors

        self._started_at = None
        try:
            # create + start, not run: run() would try to pull a missing image from a registry.
            self.container = self.client.containers.create(
                self.image, self.command, name=self.name, detach=True, labels=self.labels,
                volumes={self.folder: {"bind": SOCKET_DIR, "mode": "rw"}}, **self.run_options)
        except docker.errors.ImageNotFound:
            raise ProviderUnavailableError(
                f"image {self.image} vanished from the Docker engine (removed by `docker rmi` "
                f"or an image prune?); rebuild it with `openenv-gym build {self.env}`") from None
        except docker.errors.APIError as exc:
            # A bad container option (unknown runtime, invalid limit) is the caller's to fix.
            raise ProviderUnavailableError(
                f"the Docker engine refused the worker container: {exc.explanation or exc}; "
                "check provider_options['container_options']") from None
        except (TypeError, docker.errors.DockerException) as exc:
            # docker-py's own checks of a value, before anything reaches the engine.
            raise InvalidRequestError(f"provider_options['container_options'] has a value the "
                                      f"Docker SDK refuses: {exc}") from None
        except BaseException:
            # Interrupted (Ctrl-C) while the engine made it: a notebook lives on, and so would
            # a container this object never learnt of (its owner's watchdog waits for it to
            # exit). A thread removes it: the interrupt goes on at once.
            threading.Thread(target=self._remove_unknown, name="openenv-gym-remove-interrupted",
                             daemon=True).start()
            raise
        try:
            try:
                self.container.start()
            except docker.errors.APIError as exc:
                # Options the engine checks only at start (a network that does not exist, a
                # device, ulimits the runtime refuses) are the caller's to fix, as at create.
                raise ProviderUnavailableError(
                    f"the Docker engine could not start the worker container: "
                    f"{exc.explanation or exc}; check provider_options['container_options']") from None
            self._started_at = self._state().get("StartedAt")
            try:
                wait_ready(self.address, self.startup_timeout, self.alive, lambda: self.logs())
            except OpenEnvError:
                if self._state().get("ExitCode") == _FOLDER_UNSEEN_EXIT:
                    raise self._folder_unseen() from None
                raise
            os.chmod(self.folder, 0o555)  # connecting needs no write; filling the host's disk would
        except BaseException:  # a failed start, or an interrupt (Ctrl-C): leave no container
            self._remove()
            raise

    def _folder_unseen(self) -> ProviderUnavailableError:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        return ProviderUnavailableError(
            f"the Docker engine at {where} does not see this machine's folder {self.folder}, "
            "which it mounts into the worker for its socket: it runs on another machine or in "
            "another file system (a remote DOCKER_HOST, Docker's socket mounted into the "
            "container this runs in, Docker Desktop not sharing that folder). Set TMPDIR to a "
            "folder the engine sees at the same path (in a container: mount a host folder at "
            "its own path, `-v /srv/oeg:/srv/oeg -e TMPDIR=/srv/oeg`), or use provider='process'")

    def _state(self) -> dict[str, Any]:
        import docker.errors

        if self.container is None:
            return {}
        import requests.exceptions  # docker-py's transport: engine-unreachable errors come raw

        try:
            self.container.reload()
        except docker.errors.NotFound:
            return {"Status": "removed"}
        except (docker.errors.DockerException, requests.exceptions.ConnectionError) as exc:
            raise ProviderUnavailableError(
                f"the Docker engine does not answer ({str(exc)[:200]}); worker container "
                f"{self.name} cannot be checked or replaced. Start the engine again (`dockerd &` "
                "or Docker Desktop); the next reset then starts a fresh worker") from None
        return self.container.attrs.get("State", {})

    def _restarted(self, state: Mapping[str, Any]) -> bool:
        """Whether the engine started the container again since this worker started it
        (``docker restart``, a restart policy): the server it ran, and its sessions, ended."""
        started = state.get("StartedAt")
        return self._started_at is not None and started is not None and started != self._started_at

    def alive(self) -> bool:
        state = self._state()
        # A restarted container is not this worker: its sessions are gone, and its new server
        # fails on the socket folder, closed to writes while the first one served.
        return state.get("Status") == "running" and not self._restarted(state)

    def exit_reason(self) -> str:
        """Why the container stopped (``"exited with code 3"``), or ``""`` while it runs."""
        state = self._state()
        if not self._restarted(state):
            return self._ended(state)
        if state.get("RestartCount"):
            text = ("restarted by its restart policy (container_options restart_policy) after "
                    "the worker ended, its sessions with it")
        else:
            text = ("restarted from outside (`docker restart`, or `docker start` after it "
                    "stopped), which ended the worker and its sessions")
        now = self._ended(state)
        return f"{text}; the restarted container then {now}" if now else text

    def _ended(self, state: Mapping[str, Any]) -> str:
        """How the container's last run ended, from its ``State``; ``""`` while it runs."""
        status = state.get("Status", "removed")
        if status == "running":
            return ""
        if state.get("Paused") or status == "paused":  # a paused container keeps ExitCode 0
            return "paused (frozen by `docker pause`: it answers nothing)"
        code = state.get("ExitCode")
        # Docker's OOMKilled is sticky: any OOM kill in the container sets it, such as a
        # Coding-v0 sandbox child's (made the OOM killer's first choice, the worker lives
        # on). The worker itself died of it only if it ended by SIGKILL (137), and not by
        # the engine's own SIGKILL (`docker kill`) after that earlier OOM kill.
        engine_kill = None
        if state.get("OOMKilled") and code == _SIGKILL_EXIT:
            engine_kill = self._killed_by_engine(state)
            if engine_kill is None:  # the engine's event log cannot tell
                return (f"OOM-killed at its mem_limit, most likely (exit {code}; or killed by "
                        "`docker kill` after a process in it was OOM-killed): raise "
                        "container_options mem_limit")
            if not engine_kill:
                # Most likely, not surely: a SIGKILL from inside the container or from the
                # host (`kill -9` of its pid) after an earlier OOM kill reads the same.
                return (f"OOM-killed at its mem_limit, most likely (exit {code} with no "
                        "`docker kill`; or a SIGKILL from inside the container or the host "
                        "after a process in it was OOM-killed): raise container_options mem_limit")
        if code is None:
            return status
        if engine_kill:
            text = (f"killed by SIGKILL from the Docker engine (exit {code}: `docker kill`, "
                    "`docker rm -f`, or `docker stop` past its timeout)")
        elif code == _SIGKILL_EXIT:
            # Without Docker's OOMKilled flag: not at the container's own mem_limit.
            text = (f"killed by SIGKILL (exit {code}: `docker kill`, or the host's OOM killer "
                    "outside the container's limit)")
        else:
            text = f"exited with code {code}"
        text += f" ({state['Error']})" if state.get("Error") else ""
        if code == 0 and status == "exited":
            # The server exits 0 only when told to (SIGTERM), and its owner removes rather
            # than stops it: someone else stopped it.
            text += " (stopped from outside: `docker stop`, or the Docker engine shutting down)"
        if state.get("OOMKilled"):
            text += "; a process in it was OOM-killed earlier (at its mem_limit)"
        return text

    def _killed_by_engine(self, state: Mapping[str, Any]) -> bool | None:
        """Whether the engine's SIGKILL (``docker kill``) ended the container's last run after
        its last OOM kill, from the engine's event log; None when the log cannot tell (it keeps
        only the last few hundred events; the engine does not answer)."""
        import docker.errors
        import requests.exceptions

        started, finished = (_unix_time(state.get("StartedAt")), _unix_time(state.get("FinishedAt")))
        if self.container is None or started is None or finished is None:
            return None
        key = (self.container.id, finished)
        if key in self._engine_kills:
            return self._engine_kills[key]
        try:
            # Bounded by the run's own times (the engine's clock): a stream that ends at once.
            events = self.client.api.events(
                since=started, until=finished, decode=True,
                filters={"container": self.container.id, "event": ["oom", "kill"]})
            try:
                last = None
                for event in events:
                    action = event.get("Action") or event.get("status")
                    if action == "oom":
                        last = "oom"
                    elif action == "kill" and event.get("Actor", {}).get("Attributes", {}).get("signal") == "9":
                        last = "kill"
            finally:
                events.close()
        except (docker.errors.DockerException, requests.exceptions.RequestException, ValueError):
            return None
        if last is None:  # OOMKilled is set, so an oom event was due: the log lost it (or has it late)
            return None
        self._engine_kills[key] = last == "kill"
        return last == "kill"

    def restart(self) -> None:
        with self._lock:
            self._note_exit()
            logger.warning("openenv-gym: worker container %s (env %s) died: %s; replacing it",
                           self.name, self.env, self.last_exit)
            self._remove()
            self.restarts += 1
            self._spawn()

    def _remove(self) -> None:
        import docker.errors

        if self.container is not None:
            try:
                self.container.remove(force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):
                    raise
                # Someone else is removing it (a teammate's `openenv-gym docker stop` or
                # `docker rm -f`, the owner's watchdog): until that ends the container keeps
                # its name, and restart()'s new container of that name would be refused (409).
                self._wait_removed()
        if os.path.exists(self.socket_path):
            os.chmod(self.folder, 0o700)  # closed to writes while it served (see _spawn)
            os.unlink(self.socket_path)

    def _remove_unknown(self, timeout: float = 2.0) -> None:
        """Remove the container of this worker's name that a create cut short may have made,
        or may still be making (the engine ends a create whose caller left): retried until
        removed or ``timeout`` seconds pass."""
        import docker.errors

        deadline = time.monotonic() + timeout
        while True:
            try:
                owner.remove(self.client.containers.get(self.name))  # False: gone or going already
                return
            except docker.errors.APIError:  # not made (yet: NotFound), or the engine busy with it
                if time.monotonic() > deadline:
                    return
            time.sleep(0.1)

    def _wait_removed(self, timeout: float = 30.0) -> None:
        """Wait until the engine no longer knows the current container (a removal another
        client started ends), at most ``timeout`` seconds."""
        import docker.errors

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.client.api.inspect_container(self.container.id)
            except docker.errors.NotFound:
                return
            time.sleep(0.05)
        logger.warning("openenv-gym: container %s was still being removed by another client after "
                       "%.0f s; starting its replacement anyway", self.container.short_id, timeout)

    def stop(self) -> None:
        try:
            with self._lock:
                self._remove()
                self.container = None
        finally:
            # Also when interrupted (Ctrl-C in a slow close): the folder goes now; the
            # container, if the removal was cut short, at exit (still tracked) or by the watchdog.
            remove_folder(self.folder)
        untrack(self)

    def logs(self, tail: int = 50) -> str:
        import docker.errors

        if self.container is None:
            return ""
        try:
            text = self.container.logs(tail=tail).decode(errors="replace").rstrip()
        except docker.errors.APIError:
            text = ""
        reason = self.exit_reason()
        return f"container {self.name}: {reason}\n{text}" if reason else text


class DockerProvider(Provider):
    """Starts workers as hardened containers.

    Args:
        auto_build: Build a missing env image on first use (says so on the log); with
            ``False`` a missing image raises and names ``openenv-gym build ENV``.
        image: Use this image instead of the env's built one (a custom image; plugin envs
            build theirs like built-ins: ``openenv-gym build NAME``).
        container_options: ``containers.run`` overrides over the hardening defaults and the
            env's catalog overrides, e.g. ``{"mem_limit": "2g", "network_mode": "bridge"}``.
        startup_timeout: Seconds each worker may take to start serving.

    Example:
        >>> provider = DockerProvider(container_options={"pids_limit": 64})
        >>> [worker] = provider.start("echo")
        >>> worker.alive()
        True
        >>> provider.stop_all([worker])
    """

    name = "docker"

    def __init__(self, auto_build: bool = True, image: str | None = None,
                 container_options: Mapping[str, Any] | None = None,
                 startup_timeout: float = 60.0) -> None:
        self.startup_timeout = checked_startup_timeout(startup_timeout)
        check_flags(auto_build=auto_build)
        docker = import_or_undo("docker")

        self.auto_build = auto_build
        self.image = image
        self.container_options = _checked_container_options(container_options)
        self.client = docker.from_env(timeout=120)
        self._images: dict[str, str] = {}
        self._image_lock = threading.Lock()

    @classmethod
    def available(cls) -> tuple[bool, str]:
        try:
            docker = import_or_undo("docker")  # a Ctrl-C here must not break the next try
        except ImportError:
            return False, "the docker SDK is not installed: pip install 'openenv-gym[docker]'"
        where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        try:
            # docker-py leaves the socket of a failed connect to a Unix socket open (a
            # ResourceWarning at collection, an error under `-W error`): asked first here.
            _connect_unix(where)
            client = docker.from_env(timeout=5)
            try:
                client.ping()
            finally:
                client.close()
        except Exception as exc:  # any failure to reach the engine means "not here"
            return False, (f"no Docker engine answers at {where} ({str(exc)[:200]}); start one "
                           "(`sudo dockerd &` or Docker Desktop) or use provider='process'")
        return True, ""

    def image_for(self, info: EnvInfo) -> str:
        """The image tag for ``info``: found, or built now when ``auto_build`` is on.

        Raises:
            ProviderUnavailableError: The image is missing and cannot or may not be built.
        """
        import docker.errors

        with self._image_lock:
            if info.name in self._images:
                return self._images[info.name]
            if self.image is not None:
                try:
                    self.client.images.get(self.image)
                except docker.errors.ImageNotFound:
                    raise ProviderUnavailableError(
                        f"image {self.image!r} is not present on the Docker engine; build or "
                        "load it first (openenv_gym never pulls worker images)") from None
                tag = self.image
            else:
                tag = find_image(self.client, info) or self._build(info)
            self._images[info.name] = tag
            return tag

    def _build(self, info: EnvInfo) -> str:
        missing = build_problem() or env_code_missing(info)
        if missing:  # `openenv-gym build` would fail the same way: name the real fix only
            raise ProviderUnavailableError(f"no Docker image for env {info.name!r}: {missing}")
        if not self.auto_build:
            raise ProviderUnavailableError(
                f"no current Docker image for env {info.name!r}. Build it with "
                f"`openenv-gym build {info.name}` (or pass provider_options={{'auto_build': True}})")
        logger.warning("openenv-gym: building the Docker image for env %r (first use or its "
                       "inputs changed; offline, about 20 s, 1 min more for a missing base "
                       "image). `openenv-gym build %s` does this ahead of time.",
                       info.name, info.name)
        result = build_image(self.client, info, progress=lambda line: logger.info("%s", line))
        if result.built:
            logger.warning("openenv-gym: built %s in %.0f s", result.tag, result.seconds)
        else:  # another process (trainer, `openenv-gym build`) built it while this one waited
            logger.warning("openenv-gym: %s was built by another process meanwhile", result.tag)
        return result.tag

    def run_options(self, info: EnvInfo) -> dict[str, Any]:
        """The ``containers.run`` options for ``info``: defaults < env overrides < call overrides."""
        options = container_options(info.container_options, self.container_options)
        if (self.container_options or {}).get("environment", ...) is None:
            return options  # the caller removed the environment (``None``): add nothing
        return with_numerics_environment(options)

    def start(self, env: str, n: int = 1, env_kwargs: dict[str, Any] | None = None,
              pool: str | None = None) -> list[Worker]:
        info = get_env_info(env)
        _check_utf8(runtime_dir())  # before a build, which fails on it less clearly
        self.image_for(info)  # once, before n threads start containers
        if not _reaped:
            _reaped.append(True)
            owner.reap_stale(self.client)
        owner.ensure_watchdog()
        return super().start(info.name, n, env_kwargs, pool)

    def stop_all(self, workers: Sequence[Worker]) -> None:
        """Stop workers concurrently, then close the Docker client's idle connections.

        Every worker holds this provider's client: without this, a closed env whose worker
        objects are still referenced (``workers = list(envs.workers)``) kept ~20 sockets to
        the Docker daemon open until garbage collection. The client stays usable: a later
        call opens new connections.
        """
        try:
            super().stop_all(workers)
        finally:
            self.client.close()

    def _start_one(self, env: str, env_kwargs: dict[str, Any], index: int, pool: str) -> Worker:
        info = get_env_info(env)
        stem = f"{os.getpid()}-{pool}-docker-w{index}"
        folder = os.path.join(runtime_dir(), stem)
        make_owned_folder(folder)
        try:
            return DockerWorker(self.client, info.name, env_kwargs, self.image_for(info), folder,
                                f"openenv-gym-{stem}", owner.owner_labels(pool, info.name),
                                self.run_options(info), self.startup_timeout, self.idle_timeout)
        except BaseException:
            remove_folder(folder)  # the error carries the log tail already
            raise


#: Arguments of ``containers.run`` it does not pass on as they are (it builds the bind mounts,
#: the networks and the output handling from them), and why a worker cannot take them.
_RUN_OWN_KWARGS = {
    "volumes": "the worker's socket folder is mounted that way; mount a host folder with "
               "mounts=[docker.types.Mount('/data', '/host/folder', type='bind', read_only=True)]",
    "ports": "workers have no network (network_mode 'none'); the trainer reaches them through "
             "a Unix socket",
    "network": "workers have no network; network_mode='bridge' gives one",
    "networking_config": "workers have no network; network_mode='bridge' gives one",
    "remove": "the provider removes its containers itself",
    "stdout": "the provider reads the worker's output itself",
    "stderr": "the provider reads the worker's output itself",
    "stream": "the provider reads the worker's output itself",
}


def _checked_container_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``container_options`` as a dict of ``containers.run`` keyword arguments.

    Raises:
        InvalidRequestError: Not a mapping, or a key ``containers.run`` does not take.
    """
    from docker.models.containers import RUN_CREATE_KWARGS, RUN_HOST_CONFIG_KWARGS

    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidRequestError(f"provider_options['container_options'] must be a mapping of "
                                  f"containers.run keyword arguments, got {type(options).__name__}")
    known = set(RUN_CREATE_KWARGS) | set(RUN_HOST_CONFIG_KWARGS)
    own = sorted(set(options) & set(_RUN_OWN_KWARGS))
    if own:  # containers.run takes these, but turns them into what the provider sets itself
        raise InvalidRequestError(
            "provider_options['container_options'] cannot set "
            + "; ".join(f"{k!r}: {_RUN_OWN_KWARGS[k]}" for k in own))
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidRequestError(f"provider_options['container_options'] has keys containers.run "
                                  f"does not take: {unknown}; e.g. mem_limit, pids_limit, nano_cpus, "
                                  "network_mode, runtime (docker-py's containers.run)")
    return dict(options)
