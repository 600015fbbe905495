"""The ``ray`` provider: env workers placed across a Ray cluster by Ray's scheduler.

Each worker is a Ray actor (:class:`ServerHost`) that reserves ``num_cpus`` (and any custom
resources, e.g. ``{"docker": 1}`` for nodes that run an engine) on the node Ray picks, and
starts ``python -m openenv_gym.server ENV --tcp-port 0`` there as its own child process.
Only control goes through Ray (start, health, logs, stop); the data plane stays ours: the
client talks to the worker's binary address directly, never through Ray's object store.
The server also listens on a Unix socket in a private folder of its node: a trainer on the
same host (the socket file is there) uses that, and with it shared-memory vector slices,
as the process provider does; from anywhere else it uses TCP.

The server binds 127.0.0.1 unless ``host="node"``: on a single machine (or a test cluster
built with :class:`ray.cluster_utils.Cluster`) every node is loopback; on a real cluster the
trainer must reach each node's server port, so ``host="node"`` binds the node's own IP and
you keep that port range inside the cluster's private network.

A worker whose actor or node dies is re-placed by :meth:`RayWorker.restart` on a node that is
still alive; its new address is read back from the new actor.

Example:
    >>> provider = RayProvider(num_cpus=0.5)            # starts a local Ray if none runs
    >>> [worker] = provider.start("echo")
    >>> worker.address.startswith("unix://"), worker.tcp_address.startswith("tcp://127.0.0.1:")
    (True, True)
    >>> provider.close()                                # stops workers, shuts Ray down
"""

from __future__ import annotations

import concurrent.futures  # noqa: E402
import contextlib  # noqa: E402
import ipaddress  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import stat  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Mapping  # noqa: E402
from typing import Any, Iterable, Iterator, Sequence  # noqa: E402

try:
    import ray  # noqa: E402
    from ray.exceptions import GetTimeoutError, RayError  # noqa: E402
    from ray.util.placement_group import placement_group, remove_placement_group  # noqa: E402
    from ray.util.scheduling_strategies import (  # noqa: E402
        NodeAffinitySchedulingStrategy,
        PlacementGroupSchedulingStrategy,
    )
except ImportError as _exc:  # the registry turns this into "pip install 'openenv-gym[ray]'"
    raise ImportError(f"the ray provider needs Ray: {_exc}") from None

from openenv_gym._numbers import is_finite  # noqa: E402
from openenv_gym.errors import InvalidRequestError, OpenEnvError, ProviderUnavailableError, WorkerError  # noqa: E402
from openenv_gym.providers._docker_owner import owner_alive  # noqa: E402
from openenv_gym.providers._ray_connection import (  # noqa: E402
    acquire_ray,
    broken_ray,
    cause,
    ray_session,
    refuse_in_fork,
    release_ray,
)
from openenv_gym.providers._ray_host import ServerHost, actor_name  # noqa: E402
from openenv_gym.providers.base import Provider, Worker, env_kwargs_json  # noqa: E402

__all__ = ["RayProvider", "RayWorker", "ServerHost", "STRATEGIES"]

#: Placement strategies. SPREAD/DEFAULT schedule each actor on its own; the others reserve
#: one placement group per pool (one bundle per worker), which Ray re-places on node loss.
STRATEGIES = ("SPREAD", "DEFAULT", "PACK", "STRICT_PACK", "STRICT_SPREAD")
_GROUP_STRATEGIES = ("PACK", "STRICT_PACK", "STRICT_SPREAD")
logger = logging.getLogger("openenv_gym.ray")


def _amounts(values: dict[str, float], keys: Iterable[str]) -> str:
    # "2 CPU and 1 docker": only the resources a pool asks for (keys) matter to its placement.
    return " and ".join(f"{values.get(k, 0.0):g} {k}" for k in keys)


def _room_by_node(each: dict[str, float]) -> list[tuple[int, dict[str, float]]]:
    """How many workers asking ``each`` (every amount > 0) each live node holds in all, with
    the node's resources: what a placement's strategy can use of the cluster."""
    nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
    return [(min(int(res.get(k, 0.0) // v) for k, v in each.items()), res) for res in nodes]


_ServerHostActor = ray.remote(ServerHost)
#: ``ray.kill`` without Ray's auto-init: after a ``ray.shutdown()`` (the user's, on another
#: thread) it raises, where Ray's would silently start a new local cluster, with none of our
#: actors, behind the user's back. (Replies are read through :meth:`RayWorker._get`.)
def _without_auto_init(api: Any) -> Any:
    # Ray wraps its public calls in auto_init_wrapper (around the Ray Client dispatch, kept).
    code = getattr(api, "__code__", None)
    return api.__wrapped__ if code is not None and code.co_name == "auto_init_wrapper" else api


_ray_kill = _without_auto_init(ray.kill)
#: How often a wait for an actor's reply checks that Ray is still up (:meth:`RayWorker._get`).
_POLL_SECONDS = 0.2


class RayWorker(Worker):
    """An env server hosted by a Ray actor somewhere in the cluster.

    Attributes:
        address: Where the trainer reaches the server (re-read on every restart): its Unix
            socket when that is on this host and ``local_sockets`` is on, else
            :attr:`tcp_address`.
        tcp_address: ``tcp://IP:PORT`` of the server.
        node_id: Hex id of the Ray node it runs on.
        node_ip: That node's IP as Ray sees it.
        pid: The env server's process id (on its node; 0 inside a container).
        actor_pid: The hosting actor's process id (on its node).
        container_id: The worker container's id with ``isolation="docker"``, else None.

    Args:
        provider: The provider that placed it (holds options and the placement group).
        env: Catalog name.
        kwargs_json: Env keyword arguments as JSON.
        index: Position in its pool (its placement group bundle, if any).
        pool: Pool name (actor names).
    """

    def __init__(self, provider: "RayProvider", env: str, kwargs_json: str, index: int,
                 pool: str) -> None:
        self.provider = provider
        self.env = env
        self.kwargs_json = kwargs_json
        self.index = index
        self.pool = pool
        self.actor: Any = None
        self.node_id = self.node_ip = ""
        self.pid = self.actor_pid = 0
        self._lock = threading.Lock()
        #: The Ray connection its actor lives in (see :meth:`_on_its_ray`).
        self.session = ray_session()
        self._place()

    def _on_its_ray(self) -> bool:
        """Whether this process is still connected to the Ray its actor was placed in: after
        ``ray.shutdown()`` its actors are gone, and after a new ``ray.init()`` they are unknown
        (every call to them raises a bare ``Exception``)."""
        return self.session is not None and ray_session() == self.session

    def _shut_down_error(self) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            f"Ray was shut down while worker {self.index} of {self.env!r} ran on it; make "
            "the env again (after ray.init(), or let the provider start Ray)")

    @contextlib.contextmanager
    def _unless_ray_shut_down(self, grace: float = 5.0) -> Iterator[None]:
        """Turn a ``ray.shutdown()`` before or under a call into a typed error.

        Already shut down, the call is not made: its ``.remote()`` would go through Ray's
        auto-init and start a new local cluster with none of this env's actors. A Ray wait
        under way (our :meth:`_get` polls instead; ``placement_group.wait`` and ``_reserve``'s
        ``ray.get`` do not) when another thread (a signal handler, a UI callback) calls
        ``ray.shutdown()`` raises ``SystemExit(0)``: unhandled, the trainer ended quietly with
        status 0 in the middle of a restart. One made just after raises a ``RayError`` (Ray is
        not started). ``ray.shutdown()`` disconnects before it stops the core worker, so the
        session is gone by then (``grace`` covers a Ray that orders it otherwise); any other
        ``SystemExit`` or ``RayError`` stands.
        """
        refuse_in_fork()  # a fork's copy of this worker: Ray's calls would hang (alive(): 10 s)
        if not self._on_its_ray():
            raise self._shut_down_error()
        try:
            yield
        except SystemExit:
            deadline = time.monotonic() + grace
            while self._on_its_ray() and time.monotonic() < deadline:
                time.sleep(0.05)
            if self._on_its_ray():
                raise
            raise self._shut_down_error() from None
        except RayError:
            if self._on_its_ray():
                raise
            raise self._shut_down_error() from None

    def _get(self, ref: Any, timeout: float) -> Any:
        """``ray.get(ref, timeout=timeout)``, without waiting inside Ray's own get.

        A ``ray.get`` under way when another thread calls ``ray.shutdown()`` can block in
        Ray's C code for good, its timeout unheeded. So the reply comes through Ray's
        callback (``ref.future()``) and this thread waits on that future in short slices,
        checking between them that Ray is still up: a shutdown is then a typed error
        within a slice. The actor's errors and a timeout raise as ``ray.get``'s would.

        Raises:
            ProviderUnavailableError: Ray was shut down before or during the wait.
            GetTimeoutError: No reply within ``timeout`` seconds.
        """
        future = ref.future()  # a RayError when Ray is already shut down
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return future.result(timeout=max(0.0, min(_POLL_SECONDS, left)))
            except concurrent.futures.TimeoutError:
                if not self._on_its_ray():
                    raise self._shut_down_error() from None
                if left <= _POLL_SECONDS:
                    raise GetTimeoutError(f"no reply from worker {self.index} of "
                                          f"{self.env!r} within {timeout:g} s") from None

    def _place(self, restarting: bool = False) -> None:
        p = self.provider
        if not self._on_its_ray():
            # ray.shutdown() under live workers (a notebook cell, an RLlib teardown): Ray's
            # first .remote() would silently start a new local cluster with none of them,
            # and a Ray made anew since is not the one this env's provider holds.
            raise self._shut_down_error()
        dead = broken_ray()
        if dead:
            # Placing an actor would wait for a raylet or GCS that is gone (and Ray ends this
            # process a minute after losing its GCS): say what happened instead.
            raise ProviderUnavailableError(
                f"the local Ray this process started lost its {dead} (killed, or out of "
                f"memory), so worker {self.index} of {self.env!r} cannot be placed; make the "
                "env again: a fresh local Ray is started")
        strategy = p._strategy_for(self.pool, self.index)
        if restarting and isinstance(strategy, PlacementGroupSchedulingStrategy):
            # Ray re-places a lost node's bundles by itself; a strict group it cannot re-place
            # (STRICT_SPREAD with too few nodes left) must not keep the worker down for good.
            with self._unless_ray_shut_down():
                regrouped = strategy.placement_group.wait(p.regroup_timeout)
            if not regrouped:
                logger.warning("openenv-gym: placement group of pool %s cannot be re-placed "
                               "within %.0f s; placing worker %d freely (SPREAD)", self.pool,
                               p.regroup_timeout, self.index)
                strategy = "SPREAD"
        # Named so that closing the last env tells its actors from a user's (_ray_connection).
        options: dict[str, Any] = {"num_cpus": p.num_cpus, "max_restarts": 0,
                                   "scheduling_strategy": strategy,
                                   "name": actor_name(self.pool, self.index)}
        if p.resources:
            options["resources"] = dict(p.resources)
        if p.runtime_env:
            options["runtime_env"] = p.runtime_env
        actor = _ServerHostActor.options(**options).remote(self.env, self.kwargs_json, p.host,
                                                           p.isolation, p.docker_options, p.cgroups,
                                                           p.private_tmp, p.idle_timeout)
        self.actor = actor
        try:
            with self._unless_ray_shut_down():
                info = self._get(actor.start.remote(p.startup_timeout), timeout=p.placement_timeout)
        except GetTimeoutError:
            _kill_actor(actor)
            # A restart places one worker; a pool's start places all of them.
            n = 1 if restarting else p._starting.get(self.pool, 1)
            raise WorkerError(
                f"no Ray node took worker {self.index} of {self.env!r} within "
                f"{p.placement_timeout:.0f} s: {p.shortfall(n)}") from None
        except RayError as exc:
            _kill_actor(actor)
            # Not named ``cause``: that would shadow the imported cause() used below.
            original = getattr(exc, "cause", None)
            if isinstance(original, OpenEnvError) and not isinstance(original, WorkerError):
                raise original from None  # the env could not be made: its own error, typed
            raise WorkerError(f"worker {self.index} of {self.env!r} failed to start on Ray: "
                              f"{cause(exc)}") from None
        self.tcp_address = info["address"]
        local = info.get("local_address")
        self.address = local if p.local_sockets and local and _on_this_host(local) else self.tcp_address
        self.node_id, self.node_ip = info["node_id"], info["node_ip"]
        self.pid, self.actor_pid = info["server_pid"], info["actor_pid"]
        self.container_id = info.get("container_id")

    def alive(self) -> bool:
        if self.actor is None:
            return False
        try:
            with self._unless_ray_shut_down():
                return bool(self._get(self.actor.alive.remote(), timeout=self.provider.alive_timeout))
        except (RayError, GetTimeoutError, ProviderUnavailableError):
            return False  # a dead actor, a lost node, one too slow to answer, Ray shut down

    def restart(self) -> None:
        with self._lock:
            self._note_exit()
            self._kill()
            self.restarts += 1
            self._place(restarting=True)

    def _kill(self) -> None:
        try:
            with self._unless_ray_shut_down():
                self._stop_actor()
        except ProviderUnavailableError:
            pass  # Ray was shut down (before or during the stop): the actor went with it
        self.actor = None

    def _stop_actor(self) -> None:
        if self.actor is None:
            return
        try:
            # A graceful stop lets the server close sessions; the kill covers a hung actor.
            self._get(self.actor.stop.remote(), timeout=5.0)
            hung = False
        except (RayError, GetTimeoutError):
            hung = True
        _kill_actor(self.actor)
        if hung and self._on_its_ray():
            # Ray force-kills a hung actor's process only seconds later, and holds its CPUs
            # until then: a last close would take them for other work and leave Ray running.
            self._wait_actor_gone()

    def _wait_actor_gone(self, timeout: float = 15.0) -> None:
        """Wait (up to ``timeout``) for the actor's process to end, when it runs on this host."""
        if not self.actor_pid or self.node_id != ray.get_runtime_context().get_node_id():
            return
        deadline = time.monotonic() + timeout
        while owner_alive(self.actor_pid, "") and time.monotonic() < deadline:
            time.sleep(0.1)

    def stop(self) -> None:
        with self._lock:
            self._kill()
        self.provider._forget(self)

    def logs(self, tail: int = 50) -> str:
        if self.actor is None:
            return ""
        try:
            with self._unless_ray_shut_down():
                return str(self._get(self.actor.logs.remote(tail), timeout=5.0))
        except ProviderUnavailableError as exc:  # a fork of a Ray user, or Ray shut down: says which
            return f"(logs unavailable: {exc})"
        except (RayError, GetTimeoutError) as exc:
            return f"(logs unavailable: the actor is gone: {type(exc).__name__})"


def _checked_resources(resources: Any) -> dict[str, float]:
    """``resources`` as Ray's actor options take it, or an :class:`InvalidRequestError` naming
    the option: Ray only checks it when the first worker is placed, after a local Ray was
    started, and then raised a bare ``ValueError`` or ``TypeError`` of its own."""
    if resources is None:
        return {}
    if not isinstance(resources, Mapping) or not all(isinstance(k, str) for k in resources):
        raise InvalidRequestError(f"resources must be a dict of resource names and amounts, "
                                  f"e.g. {{'docker': 1}}; got {resources!r}")
    for name, amount in resources.items():
        if name in ("CPU", "GPU"):
            raise InvalidRequestError(f"resources cannot name {name!r}: Ray takes CPUs and GPUs "
                                      "only through their own options (num_cpus= here)")
        if not (is_finite(amount) and amount >= 0):
            raise InvalidRequestError(f"resources[{name!r}] must be a number >= 0, got {amount!r}")
    return dict(resources)


def _unspecified(host: str) -> bool:
    """Whether ``host`` is the unspecified address (IPv4's or IPv6's, or ``""``): a refusal
    check, since binding it would listen on every interface."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:  # a name ("localhost") or "node"
        return host == ""


def _kill_actor(actor: Any) -> None:
    """Kill ``actor`` for good; quietly nothing when it, or the Ray it ran on, is gone."""
    try:
        _ray_kill(actor, no_restart=True)
    except (RayError, ValueError):
        pass


def _on_this_host(address: str) -> bool:
    """Whether a worker's ``unix://`` socket is on this host (its file is here: the folder
    names are random, so another host's socket does not exist here by chance)."""
    try:
        return stat.S_ISSOCK(os.stat(address[len("unix://"):]).st_mode)
    except OSError:
        return False


class RayProvider(Provider):
    """Places workers across a Ray cluster.

    Args:
        address: Ray cluster to use: None (Ray's default: ``RAY_ADDRESS``, else the latest
            local cluster, else start one), ``"auto"`` (must exist), ``"local"`` (always
            start one), ``"HOST:PORT"`` or ``"ray://HOST:10001"``. Ignored when this process
            already called ``ray.init``.
        num_cpus: CPUs each worker reserves (fractions allowed).
        resources: Custom resources each worker needs, e.g. ``{"docker": 1}`` to land only
            on nodes started with ``--resources='{"docker": 8}'``.
        strategy: One of :data:`STRATEGIES`. SPREAD (default) puts workers on different
            nodes where it can; PACK fills as few nodes as possible; STRICT_* insist.
        node_id: Pin every worker to this node (soft: a restart after that node is lost
            goes elsewhere).
        host: ``"127.0.0.1"`` (default; single machine) or ``"node"`` (bind each node's IP,
            for trainers on another machine: keep those ports inside a private network).
        runtime_env: Ray runtime env for the actors (e.g. ``{"pip": ["openenv-gym"]}`` when
            nodes do not have the package installed).
        startup_timeout: Seconds the env server may take to start once placed.
        placement_timeout: Seconds to wait for Ray to place a worker and its server to start.
        alive_timeout: Seconds :meth:`RayWorker.alive` waits for the actor to answer.
        regroup_timeout: On restart, seconds to wait for Ray to re-place the pool's placement
            group after a node loss before placing the worker outside it.
        init_kwargs: Extra arguments for ``ray.init`` (e.g. ``num_cpus`` for a local start).
        isolation: ``"process"`` (default: the server is a child process of the actor) or
            ``"docker"`` (the actor starts a hardened container on its node through the
            Docker provider; pair it with ``resources={"docker": 1}`` so only nodes with an
            engine are picked).
        docker_options: Keyword arguments for the Docker provider on each node (e.g.
            ``{"container_options": {"mem_limit": "1g"}}``).
        local_sockets: Reach workers on this host through their Unix socket (and vector
            slices through shared memory) instead of TCP.
        cgroups: With ``isolation="process"``, give an untrusted env's server a cgroup with
            the Docker provider's pids and memory limits where its node allows it (as the
            process provider does; ``docker_options["container_options"]`` overrides them
            as it does a container's). False: never.
        private_tmp: With ``isolation="process"``, give an untrusted env's server a private
            tmpfs as its temp folder, as the process provider does (root only). False: never.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: float = 1.0,
                 resources: dict[str, float] | None = None, strategy: str = "SPREAD",
                 node_id: str | None = None, host: str = "127.0.0.1",
                 runtime_env: dict[str, Any] | None = None, startup_timeout: float = 60.0,
                 placement_timeout: float = 120.0, alive_timeout: float = 5.0,
                 regroup_timeout: float = 10.0,
                 init_kwargs: dict[str, Any] | None = None, isolation: str = "process",
                 docker_options: dict[str, Any] | None = None, local_sockets: bool = True,
                 cgroups: bool = True, private_tmp: bool = True) -> None:
        if not isinstance(strategy, str):  # str.upper() raised a bare AttributeError
            raise InvalidRequestError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
        strategy = strategy.upper()
        if isolation not in ("process", "docker"):
            raise InvalidRequestError(f"isolation must be 'process' or 'docker', got {isolation!r}")
        if strategy not in STRATEGIES:
            raise InvalidRequestError(f"unknown Ray placement strategy {strategy!r}; use one of "
                             f"{', '.join(STRATEGIES)}")
        if node_id is not None and strategy in _GROUP_STRATEGIES:
            raise InvalidRequestError(f"node_id pins workers to one node; it cannot be combined with "
                             f"strategy={strategy!r} (use SPREAD or DEFAULT)")
        if not (is_finite(num_cpus) and num_cpus >= 0):
            raise InvalidRequestError(f"num_cpus must be a number >= 0, got {num_cpus!r}")
        if address is not None and not isinstance(address, str):
            raise InvalidRequestError(f"address must be a str such as 'HOST:6379', 'auto', 'local' "
                                      f"or 'ray://HOST:10001' (or None), got {address!r}")
        for name, value in (("runtime_env", runtime_env), ("init_kwargs", init_kwargs),
                            ("docker_options", docker_options)):
            # dict("x") raised "dictionary update sequence element #0 has length 1", naming
            # nothing; Ray refused a runtime_env only at the first placement, once started.
            if value is not None and not (isinstance(value, Mapping)
                                          and all(isinstance(k, str) for k in value)):
                raise InvalidRequestError(f"{name} must be a dict of option names and values "
                                          f"(or None), got {value!r}")
        if not isinstance(host, str) or _unspecified(host):
            # A wildcard bound every interface of every node, and the trainer was handed
            # the unspecified address as tcp://HOST:PORT, which from another host reaches no worker.
            raise InvalidRequestError(f"host must be '127.0.0.1' (one machine), 'node' (each "
                                      f"node's own IP, for trainers on other hosts) or one "
                                      f"interface's address, not every interface; got {host!r}")
        for name, value in (("startup_timeout", startup_timeout), ("placement_timeout", placement_timeout),
                            ("alive_timeout", alive_timeout), ("regroup_timeout", regroup_timeout)):
            # Ray takes a negative timeout for a broken invariant and aborts this process
            # (a C++ check failure in ray.get: SIGABRT, no exception), NaN for "no limit".
            if not (is_finite(value) and value >= 0):
                raise InvalidRequestError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        self.address = address
        self.num_cpus = float(num_cpus)
        self.resources = _checked_resources(resources)
        self.strategy = strategy
        self.node_id = node_id
        self.host = host
        self.runtime_env = runtime_env
        self.startup_timeout = startup_timeout
        self.placement_timeout = placement_timeout
        self.alive_timeout = alive_timeout
        self.regroup_timeout = regroup_timeout
        self.init_kwargs = dict(init_kwargs or {})
        self.isolation = isolation
        self.docker_options = dict(docker_options or {})
        self.local_sockets = local_sockets
        self.cgroups = cgroups
        self.private_tmp = private_tmp
        self._ray_session: tuple[str, str] | None = None  # counted in, if ours (acquire_ray)
        self._connected = False
        self._groups: dict[str, Any] = {}
        self._starting: dict[str, int] = {}  # pool -> workers being started
        self._workers: list[RayWorker] = []
        self._lock = threading.Lock()

    def connect(self) -> None:
        """Connect to the cluster (or start a local one). Called by :meth:`start`."""
        with self._lock:
            if not self._connected:
                self._ray_session = acquire_ray(self.address, self.init_kwargs)
                self._connected = True

    def demand(self) -> dict[str, float]:
        """The resources one worker reserves."""
        return {"CPU": self.num_cpus, **self.resources}

    def shortfall(self, n: int) -> str:
        """Why ``n`` workers did not all find a place, and what to change: what they ask for
        in all against what the cluster has in all and free (the resources they ask for).

        Example:
            >>> RayProvider(num_cpus=1).shortfall(20)  # doctest: +SKIP
            "the pool's 20 workers ask for 20 CPU in all (1 CPU each), and the cluster has 2 CPU in all, 0 free: room for 2 such workers. Use fewer workers, a lower num_cpus= (and resources=), or add nodes (`ray start --address=...`)."
        """
        each = {k: v for k, v in self.demand().items() if v > 0}
        if not each:  # num_cpus=0 and no resources: never short of any; something else held it
            return (f"the cluster has {ray.available_resources()} free. Check `ray status`, "
                    "or raise placement_timeout.")

        cluster, free = ray.cluster_resources(), ray.available_resources()
        room = sum(fits for fits, _ in _room_by_node(each))
        total = _amounts({k: v * n for k, v in each.items()}, each)
        asked = (f"the pool's {n} workers ask for {total} in all ({_amounts(each, each)} each)"
                 if n > 1 else f"the worker asks for {_amounts(each, each)}")
        has = f"the cluster has {_amounts(cluster, each)} in all, {_amounts(free, each)} free"
        if room < n:
            return (f"{asked}, and {has}: room for {room} such worker{'s' * (room != 1)}. Use "
                    f"fewer workers, a lower num_cpus= (and resources=), or add nodes "
                    f"(`ray start --address=...` on another machine).")
        return (f"{asked}, and {has}: other work holds the rest. Stop it, or use fewer "
                f"workers, a lower num_cpus= (and resources=), or add nodes.")

    def _check_feasible(self) -> None:
        # Fail at once with the reason instead of letting Ray wait forever for a node
        # that will never exist.
        demand = {k: v for k, v in self.demand().items() if v > 0}
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if self.node_id is not None and not any(n["NodeID"] == self.node_id for n in nodes):
            raise InvalidRequestError(f"no live Ray node has id {self.node_id!r}; live nodes: "
                             f"{[n['NodeID'] for n in nodes]}")
        if not any(all(n["Resources"].get(k, 0) >= v for k, v in demand.items()) for n in nodes):
            offered = [{k: v for k, v in n["Resources"].items() if not k.startswith("node:")}
                       for n in nodes]
            raise ProviderUnavailableError(
                f"no node of the Ray cluster can host a worker asking for {demand}; nodes offer "
                f"{offered}. Start nodes with those resources (`ray start --resources=...`) or "
                "ask for less (num_cpus=, resources=).")

    def _strategy_for(self, pool: str, index: int) -> Any:
        group = self._groups.get(pool)
        if group is not None:
            return PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=index)
        if self.node_id is not None:
            return NodeAffinitySchedulingStrategy(self.node_id, soft=True)
        return self.strategy

    def start(self, env: str, n: int = 1, env_kwargs: dict[str, Any] | None = None,
              pool: str | None = None) -> list[Worker]:
        """Place ``n`` workers of ``env`` on the cluster and wait until all serve.

        Args:
            env: Catalog name.
            n: Number of workers.
            env_kwargs: JSON-serializable keyword arguments for the env.
            pool: Pool name; generated when omitted.

        Returns:
            The workers, in order.

        Raises:
            ProviderUnavailableError: No node can ever host a worker of this shape.
            WorkerError: A worker could not be placed or its server failed to start.
        """
        pool = pool or f"p{time.time_ns() % 10**10:x}"
        with self._lock:
            # For a placement timeout's message (the pool's total), and so that no other
            # pool's failed start or last stop takes Ray away while this one places its
            # workers: counted before it connects, so no stop_all() on another thread finds
            # this provider idle between its connect() and its first worker.
            self._starting[pool] = n
        try:
            self.connect()
            self._check_feasible()
            if self.strategy in _GROUP_STRATEGIES:
                self._reserve(pool, n)
            return super().start(env, n, env_kwargs, pool)
        except BaseException:
            self._release_group(pool)
            with self._lock:
                del self._starting[pool]
            # No worker of ours may hold Ray now: release the connection this start took
            # (a Ray it started is shut down), as the last worker's stop does.
            self._release(if_idle=True)
            raise
        finally:
            with self._lock:
                self._starting.pop(pool, None)

    def _idle(self) -> bool:
        """Whether no worker of this provider runs or is being placed (call under the lock):
        a pool still starting has workers in no list yet."""
        return not self._workers and not self._starting

    def _reserve(self, pool: str, n: int) -> None:
        bundle = {k: v for k, v in self.demand().items() if v > 0} or {"CPU": 0.001}
        group = placement_group([dict(bundle) for _ in range(n)], strategy=self.strategy,
                                name=f"openenv-gym-{pool}")
        try:
            ray.get(group.ready(), timeout=self.placement_timeout)
        except GetTimeoutError:
            remove_placement_group(group)
            strict = {"STRICT_SPREAD": self._too_few_nodes,
                      "STRICT_PACK": self._no_node_big_enough}.get(self.strategy)
            too_few = strict(n, bundle) if strict else ""
            if too_few:
                raise WorkerError(f"Ray could not reserve {n} x {bundle} with strategy "
                                  f"{self.strategy} within {self.placement_timeout:.0f} s: "
                                  f"{too_few}") from None
            softer = {"STRICT_SPREAD": "SPREAD or PACK", "STRICT_PACK": "PACK or SPREAD"}.get(
                self.strategy)
            raise WorkerError(
                f"Ray could not reserve {n} x {bundle} with strategy {self.strategy} within "
                f"{self.placement_timeout:.0f} s: {self.shortfall(n)}"
                + (f" A softer strategy ({softer}) may fit too." if softer else "")) from None
        self._groups[pool] = group  # bundle i hosts worker i of this pool

    def _too_few_nodes(self, n: int, bundle: dict[str, float]) -> str:
        """Why a STRICT_SPREAD group of ``n`` bundles cannot be placed when the cluster has
        fewer nodes that can host one than that, and what to do; else "" (the shortage is
        elsewhere: :meth:`shortfall` says what)."""
        # The free CPUs of one node are no use to a second worker there: counting them (as
        # shortfall() does) blamed "other work" on an idle 1-node cluster.
        hosts = sum(1 for fits, _ in _room_by_node(bundle) if fits)
        if not 0 < hosts < n:  # none at all: shortfall() says the cluster is too small
            return ""
        nodes = f"{hosts} node{'s' * (hosts != 1)} that can host one"
        return (f"STRICT_SPREAD puts each worker on a node of its own, so the pool's {n} "
                f"workers need {n} nodes, and the cluster has {nodes}. Use at most {hosts} "
                "worker" + "s" * (hosts != 1) + ", strategy SPREAD (workers share nodes where "
                "they must), or add nodes (`ray start --address=...` on another machine).")

    def _no_node_big_enough(self, n: int, bundle: dict[str, float]) -> str:
        """Why a STRICT_PACK group of ``n`` bundles cannot be placed when no node of the
        cluster has, in all, the resources of that many, and what to do; else "" (the
        shortage is elsewhere: :meth:`shortfall` says what)."""
        # STRICT_PACK puts every bundle on one node: the cluster's total (which shortfall()
        # counts) may hold the pool while no node does, and it then blamed "other work".
        rooms = _room_by_node(bundle)
        most, largest = max(rooms, key=lambda room: room[0], default=(0, {}))
        if not 0 < most < n:  # none fits one: shortfall() says the cluster is too small
            return ""
        workers = f"{most} worker{'s' * (most != 1)}"
        room = sum(fits for fits, _ in rooms)
        spread = (f"strategy PACK or SPREAD (the cluster has room for {room} such workers "
                  "over its nodes), " if room >= n else "")
        need = _amounts({k: v * n for k, v in bundle.items()}, bundle)
        return (f"STRICT_PACK puts all of a pool's workers on one node, so the pool's {n} "
                f"workers need {need} on one node ({_amounts(bundle, bundle)} each), and no "
                f"node has that: the largest has {_amounts(largest, bundle)}, room for "
                f"{workers}. Use at most {workers}, {spread}or a node with {need} (`ray start "
                "--num-cpus=...` on a bigger machine).")

    def _start_one(self, env: str, env_kwargs: dict[str, Any], index: int, pool: str) -> Worker:
        kwargs_json = env_kwargs_json(env_kwargs)
        worker = RayWorker(self, env, kwargs_json, index, pool)
        with self._lock:
            self._workers.append(worker)
        return worker

    def _forget(self, worker: RayWorker) -> None:
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)
            # A pool still starting holds its group for workers in no list yet.
            pools_in_use = {w.pool for w in self._workers} | self._starting.keys()
        for pool in [p for p in self._groups if p not in pools_in_use]:
            self._release_group(pool)

    def _release_group(self, pool: str) -> None:
        group = self._groups.pop(pool, None)
        if group is None:
            return
        try:
            remove_placement_group(group)
        except Exception:  # noqa: BLE001 - a RayError, or a bare Exception for a group of a Ray since shut down and made anew
            pass

    def stop_all(self, workers: Sequence[Worker]) -> None:
        """Stop workers; once none of this provider's workers is left, release Ray too
        (``RemoteEnv.close`` and the vector env's close end here)."""
        super().stop_all(workers)
        self._release(if_idle=True)

    def _release(self, if_idle: bool = False) -> None:
        """Release the Ray connection this provider took (:func:`release_ray`).

        Args:
            if_idle: Only if no worker of this provider runs or is being placed, checked and
                taken under one hold of the lock (not ``close()`` after an idle check: a pool
                that another thread starts in between would lose its Ray, and its workers,
                which close() stops, the moment they were placed). An idle provider's groups
                went with its pools (_forget, a failed start's cleanup).
        """
        with self._lock:
            if if_idle and not self._idle():
                return
            session, self._ray_session, self._connected = self._ray_session, None, False
        if session is not None:
            release_ray(session)

    def close(self) -> None:
        """Stop every worker this provider placed, free its placement groups, and release Ray
        (shut down if this process started or connected it and no other provider uses it)."""
        with self._lock:
            workers = list(self._workers)
        if workers:
            super().stop_all(workers)
        for pool in list(self._groups):
            self._release_group(pool)
        self._release()

    def __enter__(self) -> "RayProvider":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
