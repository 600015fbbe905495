"""``RemoteVectorEnv``: a :class:`gymnasium.vector.VectorEnv` over a pool of remote workers.

``gym.make_vec("OpenEnv/Gym-v0", num_envs=8, env_id="CartPole-v1")`` builds one through
``vector_entry_point``. Each worker hosts ``envs_per_worker`` sub-envs (default: one worker
per core) as one slice (:mod:`openenv_gym.vector.slices`): a vector step or reset writes each
env's command and action into the slice's columns — shared memory for workers on this host —
sends one small message per worker and copies the results into preallocated batch arrays.
Autoreset follows Gymnasium 1.x (``NEXT_STEP`` by default, ``SAME_STEP``, ``DISABLED``) and is
decided here, per env, as a command; a worker that dies or hangs is replaced while the other
envs carry on.

Example:
    >>> import gymnasium as gym
    >>> import openenv_gym
    >>> envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1",
    ...                     provider="process", envs_per_worker=2)
    >>> obs, info = envs.reset(seed=0)
    >>> obs.shape
    (4, 4)
    >>> obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())
    >>> envs.close()
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import os
import threading
import weakref
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector.utils import batch_space

from openenv_gym._numbers import is_flag
from openenv_gym.catalog import get_env_info
from openenv_gym.client.env import RemoteEnv, ServedGenerator, check_render_mode, not_copyable
from openenv_gym.client.kwargs import (
    NO_LIMIT,
    add_time_limit,
    keep_no_limit,
    merge_env_kwargs,
    name_misplaced_timeout,
    name_misspelt_keywords,
    take_render_mode,
)
from openenv_gym.client.spec import call_timeout, read_spec, with_served_values
from openenv_gym.errors import (
    InvalidActionError,
    InvalidRequestError,
    OpenEnvError,
    ProviderUnavailableError,
    ResetNeededError,
    WorkerCrashedError,
    WorkerError,
    WorkerTimeoutError,
    error_from_wire,
    headline,
)
from openenv_gym.protocol import ops
from openenv_gym.protocol.sockets import available_cores
from openenv_gym.protocol.slices import (
    RESET,
    SKIP,
    STEP,
    STEP_AUTORESET,
    STEP_THEN_RESET,
)
from openenv_gym.providers import get_provider, provider_options_dict
from openenv_gym.providers.base import Worker
from openenv_gym.spaces import from_wire, owned
from openenv_gym.vector.actions import BatchActions
from openenv_gym.vector.batch import BatchBuffer, batch_infos
from openenv_gym.vector.pool import WorkerFailure, WorkerPool
from openenv_gym.vector.slices import RemoteSlice

__all__ = ["RemoteVectorEnv", "parse_autoreset_mode", "default_envs_per_worker"]

#: A vector step's or reset's exchange, once read: each env's command, the workers it went
#: to, whether any env was skipped, and each worker's reply (or failure).
_Exchange = tuple[np.ndarray, list[int], bool, dict[int, Any]]


def _in_turn(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``method`` holding the vector env's turn lock: calls from several threads take
    turns (as a single env's do) instead of reading each other's replies from the columns.
    A step another thread sent (``step_async``) and has yet to gather is its turn too: the
    call waits for it instead of discarding it (SB3's ``step`` is two calls)."""
    @functools.wraps(method)
    def wrapper(self: "RemoteVectorEnv", *args: Any, **kwargs: Any) -> Any:
        with self._turns:
            self._wait_for_pending_step()
            try:
                return method(self, *args, **kwargs)
            finally:
                if self._pending is None:
                    self._turn_done.notify_all()
    return wrapper


def _gathering(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``method`` (a ``step_wait``) holding the turn lock, without waiting for a pending
    step: it is the one gathering it."""
    @functools.wraps(method)
    def wrapper(self: "RemoteVectorEnv", *args: Any, **kwargs: Any) -> Any:
        with self._turns:
            try:
                return method(self, *args, **kwargs)
            finally:
                self._turn_done.notify_all()
    return wrapper


@functools.cache
def _vector_only_kwargs() -> frozenset[str]:
    """The kwargs of a vector env's spec that are not a sub-env's: those ``gym.make_vec`` adds
    and the vector env's own (``envs_per_worker``, ``step_timeout``, ...), which a single
    env would refuse."""
    ours = inspect.signature(RemoteVectorEnv.__init__).parameters
    single = inspect.signature(RemoteEnv.__init__).parameters
    return frozenset({"vectorization_mode", "vector_kwargs", "wrappers"}
                     | {name for name in ours if name not in single})


def make_vec_spec(env_id: str, num_envs: int, kwargs: Mapping[str, Any]) -> EnvSpec | None:
    """The spec ``gym.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point",
    **kwargs)`` gives its vector env, for one built by its class with the same arguments (the
    SB3 ``RemoteVecEnv``'s), so that each sub-env's (:meth:`RemoteVectorEnv.sub_env_view`) is
    what ``gym.make`` gives.

    Args:
        env_id: The Gymnasium id.
        num_envs: Number of sub-envs.
        kwargs: The keyword arguments of that ``make_vec`` call (the vector env's and the
            sub-envs').

    Returns:
        The spec, or None for an id not registered with Gymnasium.
    """
    registered = gym.registry.get(env_id)
    if registered is None:
        return None
    # make_vec also passes a registered max_episode_steps on; ours register None (workers
    # enforce limits themselves), so it has nothing to add here.
    spec_kwargs = {**registered.kwargs, **kwargs}
    if num_envs != 1:  # as make_vec, which leaves out the default
        spec_kwargs["num_envs"] = num_envs
    spec_kwargs["vectorization_mode"] = "vector_entry_point"
    return dataclasses.replace(registered, kwargs=spec_kwargs)


#: Every vector env of this process, so that a fork gets fresh turn locks.
_vector_envs: "weakref.WeakSet[RemoteVectorEnv]" = weakref.WeakSet()


def _fresh_locks_after_fork() -> None:
    for envs in list(_vector_envs):
        envs._new_turn_lock()  # another thread may have held it at the fork
        envs._pending_thread = None  # the parent's threads are not in the child
        # A step in flight at the fork is the parent's: its replies go to the parent's
        # connections. The child's step_wait then says to reset (_gather), once, not a check
        # on every step.
        envs._pending = None


os.register_at_fork(after_in_child=_fresh_locks_after_fork)


def parse_autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    """Accept an :class:`AutoresetMode` or its name/value (``"same_step"``, ``"SameStep"``).

    Raises:
        InvalidRequestError: Not one of the three modes.
    """
    if isinstance(mode, AutoresetMode):
        return mode
    key = str(mode).replace("_", "").replace("-", "").lower()
    for m in AutoresetMode:
        if key in (m.value.lower(), m.name.replace("_", "").lower()):
            return m
    raise InvalidRequestError(f"autoreset_mode={mode!r} is not one of "
                              f"{', '.join(m.name for m in AutoresetMode)}")


class RemoteVectorEnv(VectorEnv):
    """``num_envs`` copies of a catalog env, hosted by a pool of workers and stepped together.

    Args:
        num_envs: Number of sub-environments.
        env: Catalog name or id (``"gym"``, ``"OpenEnv/Echo-v0"``); ``gym.make_vec`` fills it.
        provider: ``"auto"``, ``"process"``, ``"docker"`` or ``"ray"``.
        envs_per_worker: Sub-envs each worker hosts (stepped from one message). None (the
            default) picks one worker per available CPU core, ``ceil(num_envs / cores)`` envs
            each — more worker processes than cores only add wake-ups — except for envs
            that run untrusted actions (Coding, Git), which get a sandbox each (1).
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` (``final_obs``/``final_info``
            in the infos) or ``DISABLED`` (reset ended envs with ``options={"reset_mask": m}``).
        on_worker_error: ``"restart"`` (default): a failed worker is replaced and its envs
            report ``truncated=True`` with ``info["worker_restarted"]``; ``"raise"``: raise
            the worker's typed error (:class:`~openenv_gym.errors.WorkerCrashedError`, ...).
        step_timeout: Seconds a worker may take for one vector operation before it counts
            as failed (None: 60, or longer for an env whose own step limit is longer, such
            as Git's 120 s, times the envs a worker hosts, which it steps one after another:
            see :func:`~openenv_gym.client.spec.call_timeout`).
        provider_options: Keyword arguments for the provider.
        max_episode_steps: Truncate episodes after this many steps (as ``gym.make`` does);
            it replaces the served env's own limit (Gym-v0's registered ``TimeLimit``), so
            longer episodes run to it, as they do locally; -1: no limit at all (Gym-v0's own
            removed too, as locally).
        render_mode: Render mode of every sub-env (``"rgb_array"``, ``"ansi"``).
        copy: Return copies of the observation buffer (as ``SyncVectorEnv``'s ``copy``).
        shared_memory: Exchange actions, observations, rewards and flags with each worker
            through a sealed shared-memory buffer instead of the socket (None: whenever the
            worker is on this host, i.e. reached through a Unix socket).
        env_kwargs: Constructor arguments given as a mapping, for the names this class takes
            itself: ``gym.make_vec("OpenEnv/Coding-v0", 4, env_kwargs={"step_timeout": 5})``
            sets the sandbox's limit, where ``step_timeout=5`` sets the worker deadline.
        **kwargs: Keyword arguments for each sub-env's constructor in the workers.

    Example:
        >>> envs = RemoteVectorEnv(2, "echo", provider="process")   # = gym.make_vec(..., 2)
        >>> obs, info = envs.reset(seed=0)
        >>> obs, rewards, terminations, truncations, infos = envs.step({"message": ("a", "bb")})
        >>> obs["echo"], rewards.round(2).tolist()
        (('a', 'bb'), [0.1, 0.2])
        >>> envs.close()
    """

    #: Replaced per instance by the worker's metadata plus the chosen autoreset mode.
    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, env: str = "echo", *, provider: str = "auto",
                 envs_per_worker: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 on_worker_error: str = "restart", step_timeout: float | None = None,
                 provider_options: dict[str, Any] | None = None,
                 max_episode_steps: int | None = None, render_mode: str | None = None,
                 copy: bool = True, shared_memory: bool | None = None,
                 env_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        _check_positive_int("num_envs", num_envs)
        num_envs = int(num_envs)  # np.int64(4) too: num_envs is an int, as Gymnasium's vector envs'
        #: The step or reset in flight: its commands and the workers it went to.
        self._pending: tuple[np.ndarray, list[int], bool] | None = None
        #: The thread that sent :attr:`_pending` (other threads' calls wait for it to gather).
        self._pending_thread: threading.Thread | None = None
        self._new_turn_lock()
        _vector_envs.add(self)
        env_kwargs = merge_env_kwargs(env_kwargs, kwargs)
        render_mode = take_render_mode(env_kwargs, render_mode)
        check_render_mode(render_mode)
        if envs_per_worker is not None:
            _check_positive_int("envs_per_worker", envs_per_worker)
        if max_episode_steps is not None and max_episode_steps != NO_LIMIT:
            _check_positive_int("max_episode_steps", max_episode_steps)
        if "base_url" in env_kwargs:
            raise InvalidRequestError("a vector env starts workers of its own; base_url attaches a "
                                      "single env (gym.make(..., base_url=...))")
        if on_worker_error not in ("restart", "raise"):
            raise InvalidRequestError(f"on_worker_error={on_worker_error!r}; use 'restart' or 'raise'")
        # bool("False") is True: a string from a config file would flip the switch (and copy=None
        # handed out views that the next step overwrites).
        if not is_flag(copy):
            raise InvalidRequestError(f"copy must be True or False, got {copy!r}")
        if shared_memory is not None and not is_flag(shared_memory):
            raise InvalidRequestError(f"shared_memory must be True, False or None (whenever the worker "
                                      f"is on this host), got {shared_memory!r}")
        self.autoreset_mode = parse_autoreset_mode(autoreset_mode)
        self.info = get_env_info(env)
        if envs_per_worker is None:
            envs_per_worker = default_envs_per_worker(num_envs, self.info.untrusted)
        #: Sub-envs per worker (the last worker may host fewer).
        self.envs_per_worker = int(envs_per_worker)
        self.num_envs = num_envs
        self.on_worker_error = on_worker_error
        self.step_timeout = call_timeout({}, step_timeout, "step_timeout")
        # -1: no limit, the served env's own removed too (add_time_limit), as gym.make_vec does.
        self.max_episode_steps = None if max_episode_steps == NO_LIMIT else max_episode_steps
        self.render_mode = render_mode
        self.copy = copy
        self._pool: WorkerPool | None = None
        provider_obj = get_provider(provider, untrusted=self.info.untrusted,
                                    **provider_options_dict(provider_options))
        self.provider_name = provider_obj.name
        kwargs = dict(env_kwargs, **({"render_mode": render_mode} if render_mode else {}))
        add_time_limit(kwargs, self.info.time_limit_kwarg, max_episode_steps)
        try:
            self._pool = WorkerPool(provider_obj, self.info.name, num_envs, envs_per_worker, kwargs,
                                    timeout=self.step_timeout)
        except OpenEnvError as exc:
            name_misplaced_timeout(exc, kwargs, "gym.make_vec")
            name_misspelt_keywords(exc, "gym.make_vec", type(self))
            raise
        try:
            spec = self._pool.request(0, ops.spec())["spec"]
            self.remote_spec: dict[str, Any] = spec
            self.step_timeout = call_timeout(_worker_spec(spec, min(self.envs_per_worker, num_envs)),
                                             step_timeout, "step_timeout")
            self._pool.set_timeout(self.step_timeout)
            # A server of another protocol (ProtocolError) stops the workers started for it.
            self.single_observation_space, self.single_action_space, metadata = read_spec(spec)
        except BaseException:
            self.close()
            raise
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {**metadata, "autoreset_mode": self.autoreset_mode}

        self._obs = BatchBuffer(self.single_observation_space, num_envs)
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=np.bool_)
        self._truncations = np.zeros(num_envs, dtype=np.bool_)
        self._autoreset_envs = np.zeros(num_envs, dtype=np.bool_)
        self._elapsed = np.zeros(num_envs, dtype=np.int64)
        #: Each env's last explicit seed and how often its worker was replaced since: the
        #: first reset on a fresh worker is seeded from both (reproducible through restarts).
        self._last_seeds: list[int | None] = [None] * num_envs
        self._restart_counts = np.zeros(num_envs, dtype=np.int64)
        #: Seeds for the next reset of envs whose worker was replaced.
        self._restart_seeds: dict[int, int] = {}
        #: Why step() must wait for a reset (None once reset: the envs and this side agree).
        self._reset_needed: str | None = "call reset() before step()"
        #: Envs whose session was lost outside a step (their next step reports the restart).
        self._lost: dict[int, str] = {}
        #: Workers whose failure was raised (``on_worker_error="raise"``): the next reset()
        #: replaces them, as a single env's next reset replaces its failed worker.
        self._failed_workers: dict[int, str] = {}
        #: The last step's (or reset's) infos that came inline, by env.
        self._step_infos: dict[int, dict[str, Any]] = {}
        #: ``{env: (final_obs, final_info)}`` of the last step (``SAME_STEP``), for SB3.
        self.last_final: dict[int, tuple[Any, dict[str, Any]]] = {}
        #: Checks a step's batch of actions before anything is sent, and shapes what is sent.
        self._actions = BatchActions(self.single_action_space, self.action_space, num_envs, spec)
        self._step_cmd = np.zeros(num_envs, dtype=np.uint8)
        self._bounds = [(g[0], g[-1] + 1) for g in self._pool.groups]
        # Infos the env declares (``info_types``) come in columns: their values for every env,
        # which envs' last collected info is there, and which envs' last step info is.
        info_types: dict[str, str] = spec.get("info_types") or {}
        self._info_ok = np.zeros(num_envs, dtype=np.bool_)
        self._step_in_columns = np.zeros(num_envs, dtype=np.bool_)
        try:
            self._pool.open_slices(self.single_observation_space, self.single_action_space,
                                   shared_memory, info_types)  # checks the declared types
            # The batch of each declared info, in its column's dtype (the layout's choice).
            self._info_values = {key: np.zeros(num_envs, column.dtype)
                                 for key, column in self._pool.slices[0].info_columns.items()}
        except BaseException:
            self.close()
            raise

    # -- turns ------------------------------------------------------------------------
    def _new_turn_lock(self) -> None:
        self._turns = threading.RLock()
        #: Notified when a call ends with no step pending (the turn is free to take).
        self._turn_done = threading.Condition(self._turns)

    def _wait_for_pending_step(self) -> None:
        """Wait (holding no turn) while another live thread's ``step_async`` awaits its
        ``step_wait``; a pending step of this thread, or of a thread that ended, is left to
        the call to handle (it refuses this thread's, :meth:`_refuse_pending_call`, and
        discards a dead thread's)."""
        me = threading.current_thread()
        while self._pending is not None and self._pool is not None:
            owner = self._pending_thread
            if owner is None or owner is me or not owner.is_alive():
                return
            self._turn_done.wait(0.1)  # bounded: notices an owner thread that died meanwhile

    # -- properties -------------------------------------------------------------------
    @property
    def workers(self) -> list[Worker]:
        """The pool's workers (:class:`~openenv_gym.providers.base.Worker`), in env order."""
        return self._pool.workers if self._pool else []

    @property
    def pool(self) -> WorkerPool:
        """The worker pool (groups, sessions, fan-out)."""
        if self._pool is None:
            raise gym.error.ClosedEnvironmentError("this RemoteVectorEnv is closed")
        return self._pool

    # -- reset ------------------------------------------------------------------------
    def _refuse_inherited(self) -> None:
        if self._pool is not None and self._pool.inherited:
            if self._pool.slices_pid == os.getpid():  # this fork's own, ended with a connection
                raise ResetNeededError(
                    "the connection to a worker dropped (a call timed out or was interrupted), "
                    "which ended this forked child's envs there: call reset()")
            raise ResetNeededError(
                f"this vector env's envs belong to process {self._pool.owner_pid}, which made "
                "it; a forked child's copy starts episodes of its own: call reset()")

    @_in_turn
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``), as ``SyncVectorEnv``.

        Args:
            seed: None, an int (env ``i`` gets ``seed + i``) or one seed per env.
            options: Passed to each sub-env's reset; ``reset_mask`` (bool array of shape
                ``(num_envs,)``) limits the reset to those envs.

        Returns:
            The batched observations and infos.

        Raises:
            InvalidRequestError: ``options`` is not a mapping (a single env's worker refuses
                it too), or a seed of an env being reset is negative or not an int.
            gym.error.AlreadyPendingCallError: This thread's ``step_async`` awaits its
                ``step_wait`` (as ``AsyncVectorEnv`` refuses it): the step stays pending.
        """
        if options is not None and not isinstance(options, Mapping):
            # dict() took a list of pairs as options, and failed on others with its own text.
            raise InvalidRequestError(f"options must be a mapping (a dict) or None, got "
                                      f"{type(options).__name__}; nothing was reset")
        self._refuse_pending_call("reset()")
        self._discard_pending()  # a step sent by a thread that has ended: no one gathers it
        if self.pool.inherited:
            if options and "reset_mask" in options and not _check_mask(options["reset_mask"],
                                                                        self.num_envs).all():
                raise ResetNeededError(
                    "a forked child's copy of a vector env has no episodes of its own yet: its "
                    "first reset() resets every env (drop reset_mask)")
            # A fork's copy: sessions and shared memory of its own on the same workers.
            self._pending = None
            self.pool.own_slices()
            self._lost.clear()
            self._failed_workers.clear()  # the parent's to replace (a child may not), not ours
            self._restart_seeds.clear()
        options = dict(options) if options is not None else None
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            mask = _check_mask(options.pop("reset_mask"), self.num_envs)
        indices = [int(i) for i in np.flatnonzero(mask)]
        seeds = self._seeds(seed, indices)
        # Envs on a worker replaced since their last step (or now): their infos say so, as a
        # single env's reset on a fresh worker does.
        restarted = {i: self._lost[i] for i in indices if i in self._lost}
        restarted.update(self._replace_failed_workers(set(indices)))
        explicit = list(seeds)
        for i in indices:
            if seeds[i] is None:
                seeds[i] = self._restart_seeds.get(i)

        sent: list[bool] = []

        def note_seeds() -> None:
            # Only once sent: a reset refused before anything was sent (options the wire
            # cannot carry) keeps the last seeds, and a restarted env's pending seed.
            sent.append(True)
            for i in indices:
                if explicit[i] is not None:
                    self._last_seeds[i] = explicit[i]
                    self._restart_counts[i] = 0
                self._restart_seeds.pop(i, None)

        with self._taking(sent=lambda: bool(sent) or self._pending is not None):
            reset_infos = self._reset_envs(indices, seeds, options, on_sent=note_seeds)
            for i, text in restarted.items():
                reset_infos[i] = {**reset_infos.get(i, {}), "worker_restarted": True, "worker_error": text}
            infos = batch_infos(self.num_envs, {i: reset_infos[i] for i in indices}, self._add_info)
            self._step_infos = {i: info for i, info in reset_infos.items() if info}
            self._step_in_columns[:] = False
            for i in indices:
                self._lost.pop(i, None)
            self._terminations[mask] = False
            self._truncations[mask] = False
            self._autoreset_envs[mask] = False
            self._elapsed[mask] = 0
            self._reset_needed = None
            return self._obs.batch(self.copy), infos

    def _seeds(self, seed: Any, indices: list[int]) -> list[int | None]:
        """Each env's seed from ``reset``'s ``seed``, checked as Gymnasium checks it.

        A negative seed of an env being reset (``indices``) refuses the reset whole before
        anything is sent: sent, the other envs' workers reset them (and this side's episode
        bookkeeping missed it), where ``SyncVectorEnv`` stops at the bad seed. One of an env
        ``reset_mask`` leaves out is ignored, as ``SyncVectorEnv`` ignores it.
        """
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, np.ndarray) and seed.ndim == 0:
            seed = seed.item()  # np.array(5): the one seed it holds
        if isinstance(seed, (int, np.integer)):  # True is the int 1, as Gymnasium's vector envs take it
            seeds: list[int | None] = [int(seed) + i for i in range(self.num_envs)]
            return _non_negative(seeds, indices)
        if isinstance(seed, (str, bytes)) or not isinstance(seed, (Sequence, np.ndarray)):
            # list("12") would be two seeds, and the length error below would name no seed.
            raise InvalidRequestError(f"seed must be an int (env i gets seed + i), a list of "
                                      f"{self.num_envs} ints or None (one per env), or None; "
                                      f"got {seed!r}")
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            # Gymnasium's words, and its ValueError, as one of ours (``except OpenEnvError`` missed it).
            raise InvalidRequestError(f"If seeds are passed as a list the length must match "
                                      f"num_envs={self.num_envs} but got length={len(seeds)}: give "
                                      f"one seed (or None) per env, or one int (env i gets seed + i)")
        for i in indices:  # that of an env reset_mask leaves out is ignored, as by SyncVectorEnv
            if seeds[i] is not None and not isinstance(seeds[i], (int, np.integer)):
                # int() would take 1.7 as 1 and "3" as 3, where Gymnasium refuses both.
                raise InvalidRequestError(f"seed[{i}] must be an int or None, got {seeds[i]!r}")
        wanted = set(indices)
        return _non_negative([int(s) if s is not None and i in wanted else None
                              for i, s in enumerate(seeds)], indices)

    def _reset_envs(self, indices: list[int], seeds: list[int | None],
                    options: dict[str, Any] | None,
                    on_sent: Callable[[], None] | None = None) -> dict[int, dict[str, Any]]:
        """Reset ``indices``; a failed worker is replaced and its envs retried once.

        ``on_sent`` is called once the first reset message is sent (not if it is refused).

        Returns:
            Each reset env's info (its observation is in the batch buffer); that of an env
            whose worker was replaced says ``worker_restarted`` and ``worker_error``.
        """
        out: dict[int, dict[str, Any]] = {}
        replaced: dict[int, str] = {}  # env -> why its worker was replaced (its info says so)
        todo = indices
        for attempt in range(2):
            cmd = np.full(self.num_envs, SKIP, dtype=np.uint8)
            cmd[todo] = RESET
            self._run(cmd, seeds=seeds, options=options)
            # Sent: every env reset here starts its step count over, also one whose reset
            # raises (as a TimeLimit zeroes its count before the env's reset runs) and those
            # reset before another's raised; kept, it would end their episodes early.
            self._elapsed[todo] = 0
            if on_sent is not None and attempt == 0:
                on_sent()
            done, infos, _, errors, failures = self._collect(self._receive())
            retry: list[int] = []
            if failures:
                if attempt == 1:
                    raise self._worker_error(failures[0])
                if self.on_worker_error == "raise":
                    self._handle_failure(failures[0], reset_targets=set(todo))  # raises
                texts = {f.worker: self.pool.describe(f.worker, f.error) for f in failures}
                self._replace_together(texts, set(todo))
                for failure in failures:
                    again = [i for i in todo if self.pool.worker_of[i] == failure.worker]
                    retry.extend(again)
                    replaced.update(dict.fromkeys(again, texts[failure.worker]))
            if errors:
                raise errors[0]
            in_columns = done & self._info_ok
            out.update((i, self._column_info(i) if in_columns[i] else infos.get(i, {}))
                       for i in todo if done[i])
            if not retry:
                break
            todo = retry
        for i, text in replaced.items():
            out[i] = {**out[i], "worker_restarted": True, "worker_error": text}
        return out

    # -- step -------------------------------------------------------------------------
    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action, as ``step_async`` then ``step_wait`` would (the
        usual step runs as one straight line that calls neither: a subclass that overrides
        them should override ``step`` too).

        Args:
            actions: One action per sub-env, batched as :attr:`action_space` holds them.

        Returns:
            Batched observations, rewards, terminations, truncations and infos.
        """
        with self._turns:
            if self._pending is None and self._usual():
                return self._usual_step(actions)
            return self._step(actions)

    def _usual(self) -> bool:
        """Whether the next step is the usual one, which :meth:`_usual_step` runs: array
        observations and actions, every env stepping (none to autoreset, lost or reseeded),
        no time limit ending episodes in the same message, the envs this process's own."""
        pool = self._pool
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        return (pool is not None and self._actions.flat and self._obs.flat
                and self._reset_needed is None and not self._lost and not self._restart_seeds
                and not pool.inherited
                and (not same_step or self.max_episode_steps is None)
                and (same_step or not self._autoreset_envs.any()))

    def _usual_step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                                  dict[str, Any]]:
        """:meth:`_step` for the usual step (:meth:`_usual`), as one straight line: the same
        checks, exchange and results without :meth:`_step_async`'s per-env commands and
        :meth:`_collect`'s and :meth:`_gather`'s branches for resets, skipped envs, per-env
        infos and time limits (measured: ~20 µs of trainer CPU a step,
        ``benchmarks/bench_pong_floor.py``). Replies with anything more than the columns (an
        error, inline infos, a final observation, a failed worker) are taken from there by
        :meth:`_gather`, as any step's."""
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        command = STEP_AUTORESET if same_step else STEP
        cmd = self._step_cmd
        cmd.fill(command)
        to_send = self._actions.to_send(self._actions.batch(actions), actions, cmd)
        try:
            self._run(cmd, to_send, any_skipped=False, uniform=command)
            exchange = self._receive()
        except BaseException:
            self._forget_sent()
            raise
        replies = exchange[3]
        for w in exchange[1]:
            if replies[w]:  # a failure, or a reply with more than the columns
                self._gather(exchange)
                return self._batched()
        try:
            slices = self.pool.slices
            for w, (lo, hi) in enumerate(self._bounds):
                self._take_slice(slices[w], lo, hi)
            # What _gather does after such a step: every env stepped, nothing came inline.
            truncs = self._truncations
            if self.max_episode_steps is not None:  # not with SAME_STEP (see _usual)
                self._elapsed += 1
                truncs |= self._elapsed >= self.max_episode_steps
            if not same_step:
                self._autoreset_envs = self._terminations | truncs
            self._step_infos = {}
            if self._info_values:
                self._step_in_columns = self._info_ok.copy()
            self.last_final = {}
            return self._batched()
        except BaseException:
            self._cut_while_taking()
            raise

    def _cut_while_taking(self) -> None:
        """A step or reset was cut short (Ctrl-C) after its replies were read, while they were
        taken into the batch (:meth:`_usual_step`, :meth:`_taking`): which envs' results and
        episode ends were taken is unknown, and the next step could step an ended env or return
        a half-updated batch. The next step asks for a reset."""
        self._forget_sent()  # a reset sent meanwhile (SAME_STEP, after a restart) and not read
        self._out_of_sync()

    @contextlib.contextmanager
    def _taking(self, sent: Callable[[], bool] = lambda: True) -> Iterator[None]:
        """Around taking a step's or reset's replies in (off the usual step, which has its own
        ``try``): a cut marks the env out of sync (:meth:`_cut_while_taking`); an error raised
        on purpose (an env's, a worker's in raise mode, a restart that failed) left the envs as
        it says, and so did any error while ``sent()`` is False (nothing sent yet: a reset
        option the wire cannot carry is refused with a ``TypeError``, as a single env's)."""
        try:
            yield
        except OpenEnvError:
            raise
        except BaseException:
            if sent():
                self._cut_while_taking()
            raise

    def _forget_sent(self) -> None:
        """A step was cut short (Ctrl-C) after sending, before its replies were taken: they
        would answer the next requests. Forget it, as :meth:`_receive` would."""
        if self._pending is not None:
            self.pool._interrupted(self._pending[1])
            self._out_of_sync()

    @_in_turn
    def _step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Any step (:meth:`step`): ``step_async`` then ``step_wait``, minding an interrupt."""
        already = self._pending
        try:
            self.step_async(actions)
            return self.step_wait()
        except BaseException:
            if already is None:  # not a step this call refused to send over
                self._forget_sent()
            raise

    @_in_turn
    def step_async(self, actions: Any) -> None:
        """Send each worker the actions of its envs (one message per worker), without waiting.

        Args:
            actions: One action per sub-env, as for :meth:`step`.

        Raises:
            gym.error.AlreadyPendingCallError: A step is already in flight.
            gym.error.ResetNeeded: ``reset()`` was never called.
            ResetNeededError: With ``DISABLED`` autoreset, an ended env was stepped.
        """
        self._step_async(actions, per_env=False)

    @_in_turn
    def step_async_per_env(self, actions: Sequence[Any]) -> None:
        """:meth:`step_async` with one action per env, ``actions[i]`` env i's, as SB3's own
        VecEnvs take them: for a space without an array column (Dict, Tuple, Text) a list of
        per-env actions instead of Gymnasium's batched form; array actions as for :meth:`step`.

        Args:
            actions: One action per sub-env.
        """
        self._step_async(actions, per_env=True)

    def _step_async(self, actions: Any, per_env: bool) -> None:
        self.pool  # raises once closed
        self._refuse_inherited()
        if self._pending is not None:
            raise gym.error.AlreadyPendingCallError("step_async called twice without step_wait",
                                                    "step")
        if self._reset_needed is not None:
            raise ResetNeededError(self._reset_needed)
        acts = self._actions.batch(actions, per_env)
        mode = self.autoreset_mode
        cmd = self._step_cmd
        # The one command every env gets, when it is one (the usual step).
        uniform: int | None
        if mode is AutoresetMode.SAME_STEP:
            cmd.fill(uniform := STEP_AUTORESET)
            if self.max_episode_steps is not None:
                # The time limit ends these episodes: reset right after the step, same message.
                ending = self._elapsed + 1 >= self.max_episode_steps
                if ending.any():
                    cmd[ending] = STEP_THEN_RESET
                    uniform = None
        else:
            cmd.fill(uniform := STEP)
            if self._autoreset_envs.any():
                uniform = None
                if mode is AutoresetMode.DISABLED:
                    i = int(np.flatnonzero(self._autoreset_envs)[0])
                    raise ResetNeededError(
                        f"env {i} ended its episode; with autoreset_mode=DISABLED reset it first: "
                        "reset(options={'reset_mask': mask})")
                cmd[self._autoreset_envs] = RESET
        if self._lost:
            cmd[list(self._lost)] = SKIP
            uniform = None
        acts = self._actions.to_send(acts, actions, cmd)
        seeds = None
        if self._restart_seeds:
            seeds = [self._restart_seeds.get(i) if cmd[i] == RESET else None
                     for i in range(self.num_envs)]
        self._run(cmd, acts, seeds=seeds, any_skipped=bool(self._lost), uniform=uniform)
        # Used once sent: a step refused before anything was sent (text the wire cannot
        # carry) leaves the vector env usable, and the next step's reset still seeded.
        for i, s in enumerate(seeds or ()):
            if s is not None:
                del self._restart_seeds[i]

    @_gathering
    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Gather the replies of :meth:`step_async` into the batch buffers.

        Returns:
            Batched observations, rewards, terminations, truncations and infos.

        Raises:
            gym.error.NoAsyncCallError: No step is in flight.
            gym.error.ClosedEnvironmentError: The vector env is closed (a pending step too).
            WorkerError: A worker failed and ``on_worker_error="raise"``.
            InvalidActionError: An action did not fit (that env did not step).
        """
        self._gather()
        return self._batched()

    @_gathering
    def step_wait_per_env(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray,
                                          list[dict[str, Any]], dict[int, tuple[Any, dict[str, Any]]]]:
        """:meth:`step_wait` with per-env infos (as SB3 wants them) instead of a batched dict.

        Returns:
            Batched observations, rewards, terminations, truncations, one info dict per env,
            and ``{env: (final_obs, final_info)}`` for envs that ended (``SAME_STEP``).
        """
        self._gather()
        return (self._obs.batch(self.copy), self._rewards.copy(), self._terminations.copy(),
                self._truncations.copy(), self.last_env_infos, self.last_final)

    def _batched(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        final = self.last_final
        if not final and not self._step_infos and self._info_values and self._step_in_columns.all():
            # The usual step of an env with declared infos: every info is in the columns,
            # already batched. The same dict batch_infos would build from the per-env dicts.
            infos = {}
            for key, values in self._info_values.items():
                infos[key] = values.copy()
                infos["_" + key] = self._step_in_columns.copy()
        elif final:
            infos = {}
            by_env = self._infos_by_env()
            # Only envs with something to report: the keys come out as SyncVectorEnv orders them.
            for i in sorted(final.keys() | by_env.keys()):
                if i in final:
                    infos = self._add_info(infos, {"final_obs": final[i][0], "final_info": final[i][1]}, i)
                infos = self._add_info(infos, by_env.get(i) or {}, i)
        else:
            infos = batch_infos(self.num_envs, self._infos_by_env(), self._add_info)
        return (self._obs.batch(self.copy), self._rewards.copy(), self._terminations.copy(),
                self._truncations.copy(), infos)

    @property
    def last_env_infos(self) -> list[dict[str, Any]]:
        """Each env's info from the last step or reset (for :class:`openenv_gym.sb3.RemoteVecEnv`)."""
        by_env = self._infos_by_env()
        return [by_env.get(i) or {} for i in range(self.num_envs)]

    def _infos_by_env(self) -> dict[int, dict[str, Any]]:
        """The last step's infos by env, from the columns and the replies."""
        if not self._info_values or not self._step_in_columns.any():
            return self._step_infos
        return {**{int(i): self._column_info(int(i)) for i in np.flatnonzero(self._step_in_columns)},
                **self._step_infos}

    def _column_info(self, i: int) -> dict[str, Any]:
        """Env ``i``'s info as it came into the columns (the env's own dict, values as Python's)."""
        return {key: values[i].item() for key, values in self._info_values.items()}

    def _gather(self, exchange: _Exchange | None = None) -> None:
        """Read the step replies (or take ``exchange``, read already by :meth:`_receive`);
        per-env infos land in :attr:`last_env_infos`/:attr:`last_final`. Cut short (Ctrl-C)
        once the replies are read, the next step asks for a reset, as :meth:`_usual_step`'s."""
        if exchange is None:
            if self._pending is None:
                # close() drops a pending step: after it, say the env is closed (as
                # AsyncVectorEnv does), not that step_async was never called.
                self.pool  # raises ClosedEnvironmentError once closed
                self._refuse_inherited()  # a fork's copy of a step pending at the fork: reset first
                raise gym.error.NoAsyncCallError("step_wait called without step_async", "step")
            exchange = self._receive()
        with self._taking():
            self._settle(exchange)

    def _settle(self, exchange: _Exchange) -> None:
        """Take the replies of ``exchange`` (read by :meth:`_receive`) into the batch and the
        episode bookkeeping (:meth:`_gather`, which minds a cut)."""
        cmd = exchange[0]
        done, env_infos, final, errors, failures = self._collect(exchange)
        # Envs without declared infos skip this per-step mask: nothing is ever in columns.
        in_columns = done & self._info_ok if self._info_values else self._step_in_columns
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        limit = self.max_episode_steps
        if limit is not None:  # step counts only matter for a time limit kept here
            stepped = done & (cmd < RESET)
            self._elapsed[stepped] += 1
            self._elapsed[done & (cmd == RESET)] = 0
            self._truncations[stepped & (self._elapsed >= limit)] = True
            if same_step:
                # Ended episodes were reset in the same message; the limit ones always are.
                self._elapsed[stepped & (self._terminations | self._truncations)] = 0
        restarted: dict[int, str] = (
            {i: self._lost.pop(i) for i in list(self._lost) if cmd[i] == SKIP} if self._lost else {})
        if failures and self.on_worker_error == "raise":
            texts = {f.worker: self.pool.describe(f.worker, f.error) for f in failures}
            self._failed_workers.update(texts)
            error = self._worker_error(failures[0], text=texts[failures[0].worker])
            self._return_nothing(error, restarted, "call reset(): it replaces the failed worker")
            raise error
        # A replacement that failed to start, or (SAME_STEP) a fresh worker's reset that
        # failed: raised before this step's results are returned, as with on_worker_error="raise".
        try:
            self._replace_in_step(failures, restarted)
        except OpenEnvError as error:
            self._restart_went_wrong(error, restarted, "restarting a failed worker failed",
                                     "it tries to start the failed worker again")
            raise
        for i, text in restarted.items():
            env_infos[i] = {"worker_restarted": True, "worker_error": text}
            seed = self._seed_after_restart(i)
            if seed is not None:
                self._restart_seeds[i] = seed
            if same_step:
                final[i] = (self._obs.get(i), dict(env_infos[i]))
        if same_step and restarted:
            # Their workers are fresh: start the next episodes now, as SAME_STEP promises.
            # The seeds are kept until that reset worked: one that raises leaves them to the
            # reset() the next step asks for, seeded as this one would have been.
            seeds = [self._restart_seeds.get(i) for i in range(self.num_envs)]
            try:
                for i, info in self._reset_envs(sorted(restarted), seeds, None).items():
                    env_infos[i] = {**info, **env_infos[i]}
            except OpenEnvError as error:
                # The restart worked: name the reset, and what it raised (the error type alone,
                # _EnvServerRuntimeError, does not say), not a failed restart.
                self._restart_went_wrong(
                    error, restarted,
                    "a failed worker's replacement started, but the first reset of its envs failed: "
                    + headline(error),
                    "it resets them again")
                raise
            for i in restarted:
                self._restart_seeds.pop(i, None)
        for i in restarted:
            self._rewards[i] = 0.0
            self._terminations[i], self._truncations[i] = False, True
            self._elapsed[i] = 0
        if not same_step:
            self._autoreset_envs = self._terminations | self._truncations
        self._step_infos = env_infos
        self._step_in_columns = in_columns
        self.last_final = final
        if errors:
            raise errors[0]

    def _replace_in_step(self, failures: list[WorkerFailure], restarted: dict[int, str]) -> None:
        """Replace each failed worker of a step; its envs join ``restarted`` (env -> why).

        Raises:
            WorkerError | ProviderUnavailableError: The first replacement that failed to start,
                once every failed worker was tried (:meth:`_replace` leaves those that did not
                start to the next reset).
        """
        if not failures:
            return
        # Described before any is stopped (their exit reason, their last log lines).
        texts = {f.worker: self.pool.describe(f.worker, f.error) for f in failures}
        # Their envs, marked lost, are this step's to report (if one failed to start: the reset's).
        self._replace_together(texts, frozenset())
        restarted.update((i, self._lost.pop(i)) for worker in texts for i in self.pool.groups[worker])

    def _restart_went_wrong(self, error: OpenEnvError, restarted: dict[int, str], what: str,
                            retry: str) -> None:
        """A step's replacement of a failed worker raises ``error`` (``what`` went wrong):
        :meth:`_return_nothing`, the next step asking for the reset that ``retry``-s it (a
        fork's copy: for the child's own vector env, as the workers are the parent's)."""
        advice = (f"call reset(): {retry}" if self.pool.owned
                  else "its workers are the parent's to replace: make the child's own vector env")
        self._return_nothing(error, restarted, advice, what=what)

    def _return_nothing(self, error: OpenEnvError, restarted: dict[int, str], advice: str,
                        what: str = "") -> None:
        """A step raises ``error`` once the envs of the workers that answered stepped: their
        results are not returned, and the next step refuses with ``advice`` (``what``: what
        went wrong, if the error's type does not say it)."""
        if self.autoreset_mode is not AutoresetMode.SAME_STEP:
            # Those that ended start over at their next step, as after a step that returned: a
            # reset that leaves them out (reset_mask) must not step them past their end.
            self._autoreset_envs = self._terminations | self._truncations
        # Restarted envs not reported yet: the reset (or the step after a partial one) says so.
        self._lost.update(restarted)
        why = f" ({what})" if what else ""
        self._reset_needed = (f"the last step raised {type(error).__name__}{why} and returned no "
                              f"env's results; {advice}")

    def _seed_after_restart(self, i: int) -> int | None:
        """The seed of env ``i``'s first episode on a fresh worker: derived from its last
        explicit seed and its restart count (None when it was never seeded: random)."""
        if self._last_seeds[i] is None:
            return None
        self._restart_counts[i] += 1
        sequence = np.random.SeedSequence([self._last_seeds[i], int(self._restart_counts[i])])
        return int(sequence.generate_state(1, np.uint64)[0])

    @property
    def np_random_seed(self) -> tuple[Any, ...]:
        """Each sub-env's ``np_random_seed`` (as ``SyncVectorEnv``'s), read in the workers."""
        return self.get_attr("np_random_seed")

    @property
    def np_random(self) -> tuple[ServedGenerator, ...]:
        """Each sub-env's ``np_random`` (as ``SyncVectorEnv``'s): draws run in its worker."""
        def draw(i: int) -> Any:
            return lambda method, args, kwargs: self._per_env(
                lambda j, sid: ops.call(sid, "np_random_call", [method, *args], kwargs), [i])[0]["value"]
        return tuple(ServedGenerator(draw(i)) for i in range(self.num_envs))

    # -- the slice exchange -----------------------------------------------------------
    def _run(self, cmd: np.ndarray, actions: Any = None, seeds: list[int | None] | None = None,
             options: dict[str, Any] | None = None, any_skipped: bool = True,
             uniform: int | None = None) -> None:
        """Write each worker's part of ``cmd``/``actions`` into its slice and send them all.

        ``any_skipped=False`` promises ``cmd`` holds no ``SKIP`` (a plain step): every worker
        is involved and nothing needs checking. ``uniform`` is the command ``cmd`` holds for
        every env, if one: the command columns already holding it are left as they are.
        """
        pool = self.pool
        slices = pool.slices
        workers: list[int] = []
        extras: dict[int, dict[str, Any]] = {}
        in_column = self._actions.flat and isinstance(actions, np.ndarray)
        for w, (lo, hi) in enumerate(self._bounds):
            part = cmd[lo:hi]
            if any_skipped and (part == SKIP).all():
                continue
            workers.append(w)
            piece = slices[w]
            # Slices keep their command column between steps: a run of plain steps writes it once.
            piece.write_commands(part, uniform)
            extra: dict[str, Any] = {}
            if in_column:
                piece.columns["action"][...] = actions[lo:hi]
            elif actions is not None:
                extra["actions"] = actions[lo:hi]
            if seeds is not None and any(s is not None for s in seeds[lo:hi]):
                extra["seeds"] = seeds[lo:hi]
            if options is not None:
                extra["options"] = options
            if extra:
                extras[w] = extra
        try:
            pool.send_slices(workers, extras)
        except (InvalidRequestError, InvalidActionError, TypeError):
            raise  # refused while encoding, before anything was sent: every env is as it was
        except BaseException:
            self._out_of_sync()
            raise
        self._pending = (cmd, workers, any_skipped)
        self._pending_thread = threading.current_thread()

    def _receive(self) -> _Exchange:
        """Take the exchange :meth:`_run` sent and read its replies (results now in the slices'
        columns); cut short (Ctrl-C), the connections still owing a reply are dropped and the
        env is out of sync.

        Returns:
            The commands, the workers, whether any env was skipped, and each worker's reply.
        """
        cmd, workers, any_skipped = self._pending  # type: ignore[misc]
        pool = self.pool  # before the exchange is taken: an interrupt here leaves it pending
        self._pending = None
        try:
            replies = pool.receive_slices(workers)
        except BaseException:
            # receive_slices dropped those it had not read; one cut before it began
            # reading (its first bytecodes) left every reply due.
            pool._interrupted(workers)
            self._out_of_sync()
            raise
        return cmd, workers, any_skipped, replies

    def _collect(self, exchange: _Exchange) -> tuple[np.ndarray, dict[int, Any], dict[int, tuple[Any, Any]],
                                                      list[OpenEnvError], list[WorkerFailure]]:
        """Copy every env's results of ``exchange`` (:meth:`_receive`) into the batch.

        Returns:
            Which envs ran their command, the non-empty infos and final (obs, info) pairs
            by env, the env errors, and the failed workers.
        """
        cmd, workers, any_skipped, replies = exchange
        pool = self.pool
        done = cmd != SKIP  # less the envs of failed workers and the envs that erred, below
        infos: dict[int, Any] = {}
        finals: dict[int, tuple[Any, Any]] = {}
        errors: list[OpenEnvError] = []
        failures: list[WorkerFailure] = []
        obs = self._obs
        info_values, info_ok = self._info_values, self._info_ok
        for w in workers:
            reply = replies[w]
            lo, hi = self._bounds[w]
            if isinstance(reply, WorkerFailure):
                failures.append(reply)
                done[lo:hi] = False
                continue
            piece = pool.slices[w]
            cols = piece.columns
            # The usual step: every env of the slice ran, so whole column blocks are copied;
            # otherwise only the rows that ran (no skip, no error).
            ran = cmd[lo:hi] != SKIP if any_skipped or "errors" in reply else None
            for j, error in reply.get("errors", {}).items():
                ran[j] = done[lo + j] = False  # type: ignore[index]
                errors.append(self._step_error(lo + j, error))
            if ran is None or ran.all():
                ran = True
                self._take_slice(piece, lo, hi)
            else:
                idx = np.flatnonzero(ran)
                self._rewards[lo + idx] = cols["reward"][idx]
                self._terminations[lo + idx] = cols["terminated"][idx]
                self._truncations[lo + idx] = cols["truncated"][idx]
                if obs.flat:
                    obs.array[lo + idx] = cols["obs"][idx]
                if info_values:
                    info_ok[lo + idx] = cols["info_ok"][idx]
                    for key, column in piece.info_columns.items():
                        info_values[key][lo + idx] = column[idx]
            if not obs.flat:
                for j in range(hi - lo) if ran is True else np.flatnonzero(ran):
                    obs.write(lo + int(j), reply["obs"][j])
            if "infos" in reply:
                for j, info in reply["infos"].items():
                    infos[lo + j] = owned(info)
            if "finals" in reply:
                for j, (final_obs, final_info) in reply["finals"].items():
                    finals[lo + j] = (from_wire(final_obs, obs.space), owned(final_info))
        return done, infos, finals, errors, failures

    def _take_slice(self, piece: RemoteSlice, lo: int, hi: int) -> None:
        """Copy the results of every env of ``piece`` (envs ``lo``..``hi``) out of its columns
        into the batch: rewards, episode ends, array observations, declared infos."""
        targets = piece.targets
        if targets is None:  # the slice's first results (each step: the views made once)
            cols = piece.columns
            targets = [(self._rewards[lo:hi], cols["reward"]),
                       (self._terminations[lo:hi], cols["terminated"]),
                       (self._truncations[lo:hi], cols["truncated"])]
            if self._obs.flat:
                targets.append((self._obs.array[lo:hi], cols["obs"]))
            if self._info_values:
                targets.append((self._info_ok[lo:hi], cols["info_ok"]))
                targets += [(self._info_values[key][lo:hi], column)
                            for key, column in piece.info_columns.items()]
            piece.targets = targets
        for batch, column in targets:
            batch[...] = column

    def _out_of_sync(self) -> None:
        # Cut short (Ctrl-C) between sending and taking in every reply: the pool dropped the
        # connections whose replies were due, and which envs stepped (or ended) is unknown.
        self._pending = None
        self._reset_needed = ("the last step or reset was interrupted before its results were all taken, so "
                              "which envs stepped is unknown: call reset()")

    # -- failures ---------------------------------------------------------------------
    def _worker_error(self, failure: WorkerFailure, replaced: bool = False,
                      text: str | None = None) -> WorkerError:
        """The error to raise for ``failure`` (``text``: its description, if made already)."""
        text = text or self.pool.describe(failure.worker, failure.error)
        cls = type(failure.error) if isinstance(failure.error, WorkerError) else WorkerError
        if cls is not WorkerTimeoutError and not self._alive(failure.worker):
            # A dead worker may surface as a refused send or a reset read: name it one way.
            cls = WorkerCrashedError
        if replaced:  # a call, attribute or render: it failed once, and is being replaced
            return cls(f"{text}\n(the worker is replaced: its envs start fresh episodes, reported "
                       "with worker_restarted at their next step)")
        if self.on_worker_error == "restart":  # a reset whose retry on a fresh worker failed too
            # A timeout's text already says to raise step_timeout (the client knows its name).
            return cls(f"{text}\n(it failed again on a fresh worker)")
        return cls(f"{text}\n(on_worker_error='raise': the next reset() replaces the worker; pass "
                   "on_worker_error='restart' to replace failed workers and continue with "
                   "truncated episodes)")

    def _alive(self, worker: int) -> bool:
        try:
            return bool(self.pool.workers[worker].alive())
        except Exception:  # an engine that cannot answer counts as a dead worker
            return False

    def _handle_failure(self, failure: WorkerFailure, reset_targets: AbstractSet[int] = frozenset(),
                        text: str | None = None) -> list[int]:
        """Replace a failed worker (or raise); its envs not being reset are marked lost.
        ``text``: the failure's description, if made already (it reads the worker's log)."""
        text = text or self.pool.describe(failure.worker, failure.error)
        if self.on_worker_error == "raise":
            self._failed_workers[failure.worker] = text
            raise self._worker_error(failure, text=text)
        return self._replace(failure.worker, text, reset_targets)

    def _replace(self, worker: int, text: str, reset_targets: AbstractSet[int],
                 restarted: Mapping[int, Exception] | None = None) -> list[int]:
        """Restart ``worker`` (failed: ``text`` says how); its envs not being reset are marked
        lost (their next step reports the restart), and returned. ``restarted``: the worker
        was restarted already, by :meth:`WorkerPool.restart_all`, which returned these errors."""
        try:
            if restarted is None:
                self.pool.restart(worker)
            elif worker in restarted:
                raise restarted[worker]
        except Exception as exc:
            if not self.pool.owned:  # a fork's copy: the text says to make its own env
                raise WorkerError(f"{text}\nand restarting it failed too: {exc}") from exc
            # Its envs have no session anywhere: until a reset starts the worker again, a step
            # would step the others on as if nothing were missing.
            self._failed_workers[worker] = text
            envs = self.pool.groups[worker]
            self._reset_needed = (f"restarting failed worker {worker} (envs {envs[0]}..{envs[-1]}) "
                                  f"failed ({type(exc).__name__}); call reset(): it tries to start the worker again")
            again = "\n(the next reset() tries to start the worker again)"
            if isinstance(exc, ProviderUnavailableError):
                # Nowhere to start one (Docker's engine or Ray gone): its own type, as a single env says.
                exc.args = (f"{exc}{again}",)
                raise
            raise WorkerError(f"{text}\nand restarting it failed too: {exc}{again}") from exc
        self._failed_workers.pop(worker, None)
        lost = [i for i in self.pool.groups[worker] if i not in reset_targets]
        for i in lost:
            self._lost[i] = text
        return lost

    def _replace_failed_workers(self, reset_targets: AbstractSet[int]) -> dict[int, str]:
        """Replace the workers whose failure was raised (:meth:`_replace`).

        Returns:
            The envs of ``reset_targets`` on a replaced worker, with why it was replaced.
        """
        texts = dict(self._failed_workers)
        self._replace_together(texts, reset_targets)  # takes them out of _failed_workers
        return {i: text for worker, text in texts.items()
                for i in self.pool.groups[worker] if i in reset_targets}

    def _replace_together(self, texts: Mapping[int, str], reset_targets: AbstractSet[int]) -> None:
        """:meth:`_replace` the failed workers ``texts`` (worker -> how it failed), restarted
        at the same time (:meth:`WorkerPool.restart_all`): one after the other, each hung
        worker's stop grace and each start would add up.

        Raises:
            WorkerError | ProviderUnavailableError: The first replacement that failed to start,
                once every worker was tried; the envs of ``reset_targets`` on those that did
                start are then marked lost too (the next reset or step reports their restart).
        """
        if not texts:
            return
        errors = self.pool.restart_all(list(texts))
        first: OpenEnvError | None = None
        started: list[int] = []
        for worker, text in texts.items():
            try:
                self._replace(worker, text, reset_targets, errors)
            except (WorkerError, ProviderUnavailableError) as exc:
                first = first or exc
            else:
                started.append(worker)
        if first is not None:
            for worker in started:
                self._lost.update((i, texts[worker]) for i in self.pool.groups[worker] if i in reset_targets)
            raise first

    # -- call / attributes / render ---------------------------------------------------
    def _targets(self, indices: int | Sequence[int] | None) -> list[int]:
        """The envs ``indices`` names, as SB3's ``VecEnv`` takes them: None (all), one int,
        or a sequence of ints; a negative index counts from the end, as in a list.

        Raises:
            IndexError: An index outside ``range(-num_envs, num_envs)``.
            TypeError: ``indices`` is none of those, or holds something not an int (a bool,
                a float, a string: ``int()`` would have taken ``True``, ``1.7`` and ``"1"``).
        """
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, (int, np.integer)) and not isinstance(indices, bool):
            indices = [indices]
        if isinstance(indices, (str, bytes, bool)) or not isinstance(indices, Iterable):
            raise TypeError(f"indices must be None, an env index or a sequence of them, got {indices!r}")
        targets = []
        for i in indices:
            if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
                raise TypeError(f"indices must hold env indices (ints), got {i!r} in {indices!r}")
            j = int(i)
            if not -self.num_envs <= j < self.num_envs:
                raise IndexError(f"env index {j} is out of range for {self.num_envs} envs")
            targets.append(j % self.num_envs)
        return targets

    @_in_turn
    def _per_env(self, make: Callable[[int, str], dict[str, Any]],
                 indices: int | Sequence[int] | None = None) -> tuple[Any, ...]:
        """Send ``make(i, sid)`` (a :mod:`~openenv_gym.protocol.ops` request) to each env (all,
        or ``indices``), one batch per worker.

        Returns:
            The sub-replies, in the order of ``indices`` (env order by default).

        Raises:
            gym.error.AlreadyPendingCallError: This thread's ``step_async`` awaits its
                ``step_wait`` (as Gymnasium's ``AsyncVectorEnv`` refuses the call): the
                served envs have stepped, and answering first would lose that step's results.
        """
        self._refuse_pending_call()
        self._discard_pending()  # a step sent by a thread that has ended: no one gathers it
        pool = self.pool
        self._refuse_inherited()
        targets = self._targets(indices)
        order: dict[int, list[int]] = {}  # worker -> positions in targets (an env may repeat)
        for k, i in enumerate(targets):
            order.setdefault(pool.worker_of[i], []).append(k)
        calls = {w: [make(targets[k], pool.sid(targets[k])) for k in ks] for w, ks in order.items()}
        values: list[Any] = [None] * len(targets)
        for w, reply in pool.exchange(calls).items():
            if isinstance(reply, WorkerFailure):
                text = self.pool.describe(reply.worker, reply.error)
                error = self._worker_error(reply, replaced=self.on_worker_error == "restart", text=text)
                self._handle_failure(reply, text=text)
                raise error
            for k, sub in zip(order[w], reply):
                if not sub["ok"]:
                    raise self._per_env_error(targets[k], sub)
                values[k] = owned(sub)  # a call's value, a frame: the caller's to write into
        return tuple(values)

    def _refuse_pending_call(self, what: str = "call(), get_attr(), set_attr() or render()") -> None:
        """Refuse ``what`` while this thread's ``step_async`` awaits its ``step_wait``, as
        Gymnasium's ``AsyncVectorEnv`` refuses any call then (also one this side could answer
        without a request, such as ``get_attr("spec")``): the served envs have stepped, and a
        reset would drop that step's results. The step stays pending for ``step_wait``.

        Raises:
            gym.error.AlreadyPendingCallError: This thread's step is pending.
        """
        if self._pending is not None and self._pending_thread is threading.current_thread():
            raise gym.error.AlreadyPendingCallError(
                f"a step is pending: call step_wait() before {what}, or the step's rewards and "
                "episode ends would be lost", "step")

    def _step_error(self, i: int, wire: Any) -> OpenEnvError:
        """The error env ``i``'s worker reported (``wire``) for its part of a step."""
        error = _env_error(i, {"error": wire})
        if isinstance(error, ResetNeededError) and self.autoreset_mode is AutoresetMode.SAME_STEP:
            # SAME_STEP resets an env in the step that ends its episode, so an ended episode
            # here means that reset raised (the error that step raised said what); the
            # worker's text names a session id the caller never sees, and says nothing of that.
            error.args = (f"env {i}: its reset after its episode ended failed, so it has no episode "
                          f"to step (autoreset_mode=SAME_STEP); reset(), or "
                          f"reset(options={{'reset_mask': mask}}) with env {i} in the mask, starts "
                          "a new one",)
        return error

    def _per_env_error(self, i: int, sub: dict[str, Any]) -> OpenEnvError:
        """The error of env ``i``'s failed call, render or attribute request (``sub``)."""
        error = _env_error(i, sub)
        replaced = self.pool.workers[self.pool.worker_of[i]].restarts > 0
        if isinstance(error, ResetNeededError) and self._autoreset_envs[i] and replaced:
            # Not the caller's missing reset: a replaced worker's env waits for the reset that
            # starts its fresh episode, and until then has no state (Gymnasium's text says
            # "before calling env.reset()", which the caller did).
            when = ("reset(options={'reset_mask': ...})" if self.autoreset_mode is AutoresetMode.DISABLED
                    else "the next step()")
            error.args = (f"{error.args[0]}\n(env {i}'s worker was replaced; its fresh episode has no "
                          f"state until {when} resets it)",)
        return error

    def call(self, name: str, *args: Any, indices: int | Sequence[int] | None = None,
             **kwargs: Any) -> tuple[Any, ...]:
        """Call a method (or read an attribute) of every sub-env in its worker.

        Args and results must cross the wire (numbers, text, lists, dicts, arrays).

        Args:
            name: The method or attribute.
            *args: Positional arguments of the call.
            indices: Only these sub-envs (all by default). The name is taken here, as SB3's
                ``env_method`` takes it: a served method's own ``indices`` argument cannot
                be passed through.
            **kwargs: Keyword arguments of the call.

        Returns:
            One result per sub-env (in ``indices``).

        Raises:
            gym.error.AlreadyPendingCallError: This thread's ``step_async`` awaits its
                ``step_wait``, even for an attribute answered here (``"spec"``).
        """
        self._refuse_pending_call()
        held = self.sub_env_view()
        if name in held:  # attributes, read as Gymnasium's call reads one that is no method
            return (held[name],) * len(self._targets(indices))
        subs = self._per_env(lambda i, sid: ops.call(sid, name, args, kwargs), indices)
        return tuple(s["value"] for s in subs)

    def get_attr(self, name: str, *, indices: int | Sequence[int] | None = None) -> tuple[Any, ...]:
        """Read an attribute of every sub-env (or of those in ``indices``).

        Args:
            name: The attribute of the served envs.
            indices: One env index or a sequence of them (default: every env).

        Returns:
            One value per sub-env (``np_random``: each one's Generator, drawing in its worker).
        """
        self._refuse_pending_call()
        targets = self._targets(indices)
        held = self.sub_env_view()
        if name in held:
            return (held[name],) * len(targets)
        if name == "np_random":  # a Generator cannot cross the wire: each env's draws in its worker
            generators = self.np_random
            return tuple(generators[i] for i in targets)
        subs = self._attr_replies(name, targets)
        methods = [k for k, s in enumerate(subs) if s.get("callable")]
        if not methods:
            return tuple(s["value"] for s in subs)
        # A method (``get_action_meanings``): called, as Gymnasium's own vector envs'
        # get_attr calls it (their get_attr is call(name)).
        values = [s.get("value") for s in subs]
        called = self.call(name, indices=[targets[k] for k in methods])
        for k, value in zip(methods, called):
            values[k] = value
        return tuple(values)

    def sub_env_view(self) -> dict[str, Any]:
        """The sub-envs' attributes this side holds, answered without a request: their spaces,
        which cannot cross the wire (``SyncVectorEnv.get_attr("observation_space")`` gives
        each sub-env's), and their ``spec``: a served env is built by its class, not by
        ``gym.make``, so its own is None.

        Returns:
            The attributes by name, the same for every sub-env.

        Raises:
            gym.error.AlreadyPendingCallError: This thread's ``step_async`` awaits its
                ``step_wait``: reading these is a call, refused then as ``get_attr`` refuses
                the served attributes.
        """
        self._refuse_pending_call()
        return {"observation_space": self.single_observation_space,
                "action_space": self.single_action_space,
                "spec": self._sub_env_spec()}

    def _sub_env_spec(self) -> EnvSpec | None:
        """What ``gym.make`` gives each sub-env as its spec, as a ``SyncVectorEnv`` made by
        ``gym.make_vec`` holds: this env's spec without ``make_vec``'s own kwargs, its
        ``max_episode_steps`` the served env's own limit where none was given (CartPole-v1's
        500, as :attr:`RemoteEnv.spec <openenv_gym.client.env.RemoteEnv.spec>`) and its
        ``reward_threshold`` the served env's (CartPole-v1's 475). None for a
        vector env built by its class (as a ``SyncVectorEnv`` of bare envs)."""
        if self.spec is None:
            return None
        kwargs = {k: v for k, v in self.spec.kwargs.items() if k not in _vector_only_kwargs()}
        # A time limit given to make_vec is the sub-env's, as gym.make's TimeLimit holds it.
        limit = self.spec.kwargs.get("max_episode_steps", self.spec.max_episode_steps)
        spec = dataclasses.replace(self.spec, kwargs=kwargs,
                                   max_episode_steps=None if limit == NO_LIMIT else limit)
        if limit == NO_LIMIT:  # as gym.make's spec after its -1, which the served envs took
            spec = with_served_values(spec, self.remote_spec, limit=False)
            return keep_no_limit(spec, self.info.time_limit_kwarg)
        return with_served_values(spec, self.remote_spec)

    def _attr_replies(self, name: str, targets: list[int]) -> tuple[dict[str, Any], ...]:
        """Each target env's ``get_attr`` reply, nothing called: ``{"value": ...}``, or
        ``{"callable": True}`` for a method (SB3's ``get_attr`` hands out a stand-in for it)."""
        return self._per_env(lambda i, sid: ops.get_attr(sid, name), targets)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any, *,
                 indices: int | Sequence[int] | None = None) -> None:
        """Set an attribute of every sub-env (or of those in ``indices``): one value for all,
        or a list/tuple of one per env.

        Args:
            name: The attribute of the served envs.
            values: One value for every env, or a list/tuple of one per env (in ``indices``).
            indices: One env index or a sequence of them (default: every env)."""
        targets = self._targets(indices)
        if not isinstance(values, (list, tuple)):
            values = [values] * len(targets)
        if len(values) != len(targets):
            raise ValueError("Values must be a list or tuple with length equal to the number of "
                             f"environments. Got `{len(values)}` values for {len(targets)} environments.")
        value_of = dict(zip(targets, values))
        self._per_env(lambda i, sid: ops.set_attr(sid, name, value_of[i]), targets)

    def render(self) -> tuple[Any, ...]:
        """Every sub-env's frame (``rgb_array``) or text (``ansi``); one None per sub-env
        without a render mode, as Gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` give."""
        self._refuse_pending_call()
        if self.render_mode is None:
            return (None,) * self.num_envs
        return tuple(s["frame"] for s in self._per_env(lambda i, sid: ops.render(sid)))

    # -- lifecycle --------------------------------------------------------------------
    def __enter__(self) -> "RemoteVectorEnv":
        """Use as a context manager that closes the vector env (and stops its workers) on
        exit, as a single ``gymnasium.Env`` does.

        Example:
            >>> with gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process") as envs:
            ...     obs, infos = envs.reset(seed=0)
            >>> envs.closed
            True
        """
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        raise not_copyable(self)

    def _discard_pending(self) -> None:
        if self._pending is not None and self._pool is not None:
            workers = self._pending[1]
            self._pending = None
            self._pool.receive_slices(workers)  # keeps every connection in frame

    def close_extras(self, **kwargs: Any) -> None:
        """Stop every worker of the pool.

        Args:
            **kwargs: Gymnasium's ``close`` keywords (unused).
        """
        pool, self._pool = self._pool, None
        self._pending = None
        if pool is not None:
            pool.close()

    def __repr__(self) -> str:
        return (f"RemoteVectorEnv({self.info.gym_id}, num_envs={self.num_envs}, "
                f"provider={getattr(self, 'provider_name', '?')!r})")


def _worker_spec(spec: dict[str, Any], envs: int) -> dict[str, Any]:
    """``spec`` with its longest step (``max_step_seconds``) made a worker's longest exchange:
    a worker steps its ``envs`` one after another, so a deadline of one env's longest step
    gave up a worker whose envs each took a long step within their own limit, and replaced it
    (its envs' episodes lost) though nothing was wrong."""
    longest = spec.get("max_step_seconds")
    if longest is None:
        return spec
    return {**spec, "max_step_seconds": float(longest) * envs}


def default_envs_per_worker(num_envs: int, untrusted: bool = False) -> int:
    """Sub-envs per worker when none is asked for: one worker per available core.

    Args:
        num_envs: Sub-envs of the vector env.
        untrusted: The env runs untrusted actions: every env gets its own sandbox.

    Returns:
        ``1`` for untrusted envs, else ``ceil(num_envs / cores)``.

    Example:
        >>> default_envs_per_worker(8, untrusted=True)
        1
    """
    if untrusted:
        return 1
    return max(1, math.ceil(num_envs / available_cores()))


def _check_positive_int(name: str, value: Any) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise InvalidRequestError(f"{name} must be a positive integer, got {value!r}")


def _non_negative(seeds: list[int | None], indices: list[int]) -> list[int | None]:
    """``seeds``, once no env of ``indices`` has a negative one (see ``RemoteVectorEnv._seeds``).

    Raises:
        InvalidRequestError: The first such env and its seed.
    """
    for i in indices:
        if seeds[i] is not None and seeds[i] < 0:  # type: ignore[operator]
            raise InvalidRequestError(f"seed for env {i} must be a non-negative integer (as "
                                      f"Gymnasium's seeding takes it), got {seeds[i]}; nothing was reset")
    return seeds


def _check_mask(mask: Any, n: int) -> np.ndarray:
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
    if mask.shape != (n,):
        raise ValueError(f"`options['reset_mask']` must have shape `({n},)`, got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
    if not np.any(mask):
        raise ValueError("`options['reset_mask']` must contain a boolean array with at least one "
                         f"True value, got reset_mask={mask}")
    return mask


def _env_error(i: int, sub: dict[str, Any]) -> OpenEnvError:
    error = error_from_wire(sub.get("error"))
    error.args = (f"env {i}: {error}",)
    return error
