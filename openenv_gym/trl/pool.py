"""``EnvPool``: many sandboxed episodes at once over a pool of openenv_gym workers.

The pool starts ``num_workers`` workers of one env through a provider (process, docker,
ray) and runs episodes on them from a thread pool: ``concurrency`` lanes per worker, each
lane with its own connection and session. :meth:`EnvPool.run` takes a batch of scripted
episodes (reset, then a list of actions) and hands them out to free lanes as they free
up, so one slow episode (a test suite that takes seconds) holds one lane, not the batch.
:meth:`EnvPool.open` leases sessions for multi-turn episodes driven from outside (the
GRPO rollout generates each next action), and :meth:`EnvPool.step_many` steps them
concurrently.

Faults never raise out of a batch: an episode that exceeds ``episode_timeout`` or whose
worker dies gets the failure reward (see :class:`~openenv_gym.trl.outcome.FailurePolicy`),
its reason is logged on the ``openenv_gym.trl`` logger and counted in :attr:`EnvPool.stats`,
and the worker is replaced so the next batch finds it healthy.

Example:
    >>> pool = EnvPool("echo", num_workers=2, provider="process")
    >>> outcomes = pool.run([EpisodeJob([{"message": "hi"}]), EpisodeJob([{"message": "hello"}])])
    >>> [round(o.reward, 1) for o in outcomes]
    [0.2, 0.5]
    >>> pool.close()
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import gymnasium as gym

from openenv_gym._numbers import is_finite, is_int
from openenv_gym.catalog import get_env_info
from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import (
    InvalidRequestError,
    OpenEnvError,
    ProtocolError,
    SessionNotFoundError,
    WorkerError,
    WorkerTimeoutError,
)
from openenv_gym.protocol import ops
from openenv_gym.providers import get_provider, provider_options_dict
from openenv_gym.providers.base import Worker, stop_when_dropped
from openenv_gym.client.kwargs import merge_env_kwargs
from openenv_gym.client.spec import call_timeout, read_spec
from openenv_gym.spaces import from_wire, owned
from openenv_gym.trl.outcome import REWARD_MODES, EpisodeOutcome, FailurePolicy, FailureReward

__all__ = ["EnvPool", "EpisodeJob", "Episode"]

logger = logging.getLogger("openenv_gym.trl")


@dataclass
class EpisodeJob:
    """A scripted episode: reset, then take ``actions`` in order until the episode ends.

    Args:
        actions: The actions (dicts in the env's action format, e.g. ``{"code": ...}``).
        options: ``reset(options=...)`` (e.g. ``{"problem": 17}`` for Coding's task mode).
        seed: ``reset(seed=...)``.

    Example:
        >>> EpisodeJob(actions=[{"code": "print(1)"}], options={"problem": 17}).seed is None
        True
    """

    actions: Sequence[Any]
    options: Optional[dict[str, Any]] = None
    seed: Optional[int] = None
    #: Free-form tag carried to logs (e.g. the batch index).
    tag: Any = field(default=None, compare=False)


class _Failure(Exception):
    """Internal: an episode failed with a known kind (never leaves this module)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Episode:
    """A session leased from an :class:`EnvPool` for one episode at a time.

    Obtained from :meth:`EnvPool.open`; drive it with :meth:`reset` and :meth:`step` (or
    many at once with :meth:`EnvPool.reset_many` / :meth:`EnvPool.step_many`). Failures
    do not raise: they end the episode and are recorded in :attr:`outcome`.

    Args:
        pool: The pool that leased it.
        worker: Index of the worker hosting its session.

    Attributes:
        outcome: What the current episode produced so far.

    Example:
        >>> with EnvPool("echo", num_workers=1, provider="process") as pool:
        ...     [episode] = pool.open(1)
        ...     _ = episode.reset(seed=0)
        ...     episode.step({"message": "hi"}).rewards
        ...     episode.close()
        [0.2]
    """

    def __init__(self, pool: "EnvPool", worker: int) -> None:
        self.pool = pool
        self.worker = worker
        self._client = BinaryClient(pool.workers[worker].address, pool.step_timeout,
                                    timeout_name="step_timeout")
        self._generation = pool._generations[worker]
        self._sid: Optional[str] = None
        #: Seconds of env time the episode has left: only its requests spend it, so a loop
        #: that waits on a model between steps (multi-turn rollouts, TRL's tool loop) does
        #: not time the env out with generation time.
        self._budget = 0.0
        self.outcome = EpisodeOutcome(worker=worker)

    # -- requests ------------------------------------------------------------------------
    def _request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.pool._check_open()  # its workers are stopped: say so, not IndexError
        if self._budget <= 0:
            raise _Failure("timeout", f"episode exceeded episode_timeout={self.pool.episode_timeout}s")
        if self._generation != self.pool._generations[self.worker]:
            raise _Failure("crash", f"worker {self.worker} was restarted mid-episode (another "
                                    "episode on it timed out or crashed)")
        if self._client.address != self.pool.workers[self.worker].address:
            self._client.drop()
            self._client.address = self.pool.workers[self.worker].address
        started = time.monotonic()
        limit = min(self.pool.step_timeout, self._budget)
        try:
            return self._client.request(message, timeout=limit)
        except WorkerTimeoutError:
            if limit < self._budget:  # the request's own cap ran out, not the episode's time
                raise _Failure("timeout", f"worker {self.worker} gave no answer within "
                                          f"step_timeout={self.pool.step_timeout}s (raise it if "
                                          "the env is slow)") from None
            raise _Failure("timeout", f"episode exceeded episode_timeout={self.pool.episode_timeout}s "
                                      f"(worker {self.worker} gave no answer in time)") from None
        except SessionNotFoundError as exc:
            raise _Failure("crash", f"session lost on worker {self.worker}: {exc}") from None
        except (WorkerError, ProtocolError, OSError) as exc:
            raise _Failure("crash", f"worker {self.worker} failed: {exc}") from None
        except OpenEnvError as exc:
            raise _Failure("env_error", f"{type(exc).__name__}: {exc}") from None
        finally:
            self._budget -= time.monotonic() - started

    def _fail(self, failure: _Failure) -> EpisodeOutcome:
        out = self.outcome
        out.failure, out.message = failure.kind, str(failure)
        out.reward = self.pool.policy.reward_for(failure.kind)
        self.pool._record_failure(self, failure)
        self._sid = None
        if failure.kind in ("timeout", "crash"):
            # The connection may hold a late reply, or lead to a worker since replaced: the
            # lane's next episode connects anew instead of failing on it (and restarting a
            # healthy worker).
            self._client.drop()
        return out

    # -- episode -------------------------------------------------------------------------
    def reset(self, options: Optional[dict[str, Any]] = None, seed: Optional[int] = None) -> EpisodeOutcome:
        """Start a new episode with a budget of ``episode_timeout`` seconds of env time.

        A worker found dead at reset (it died between episodes: the OOM killer, another
        session's code) is replaced and the reset runs once more on the fresh worker, so
        the episode starts instead of failing before it ran anything (the crash is still
        logged and counted).

        Returns:
            The fresh :attr:`outcome` (its ``observations[0]`` is the reset observation;
            on failure, ``failure`` is set).
        """
        generation = self.pool._generations[self.worker]
        out = self._reset_once(options, seed)
        if out.failure == "crash" and self.pool._generations[self.worker] != generation:
            out = self._reset_once(options, seed)
        return out

    def _reset_once(self, options: Optional[dict[str, Any]], seed: Optional[int]) -> EpisodeOutcome:
        self._budget = self.pool.episode_timeout
        self._generation = self.pool._generations[self.worker]
        self.outcome = EpisodeOutcome(worker=self.worker)
        try:
            try:
                # The lane's session is reused: no new env on the worker.
                reply = self._request(ops.reset(self._sid, seed, options))
            except _Failure as failure:
                if self._sid is None or failure.kind != "crash":
                    raise
                reply = self._request(ops.reset(None, seed, options))
        except _Failure as failure:
            return self._fail(failure)
        self._sid = reply["sid"]
        self.outcome.observations.append(from_wire(reply["obs"], self.pool.observation_space))
        self.outcome.infos.append(owned(reply.get("info", {})))
        return self.outcome

    def step(self, action: Any) -> EpisodeOutcome:
        """Take one step; a no-op when the episode is already over.

        Returns:
            The updated :attr:`outcome`; ``outcome.reward`` holds the env's reward so far
            (per the pool's ``reward_mode``) or the failure reward.
        """
        out = self.outcome
        if out.done:
            return out
        if self._sid is None:
            return self._fail(_Failure("env_error", "step() before a successful reset()"))
        out.actions.append(action)
        try:
            reply = self._request(ops.step(self._sid, action))
        except _Failure as failure:
            return self._fail(failure)
        out.rewards.append(float(reply["reward"]))
        out.observations.append(from_wire(reply["obs"], self.pool.observation_space))
        out.infos.append(owned(reply.get("info", {})))
        out.terminated, out.truncated = bool(reply["terminated"]), bool(reply["truncated"])
        out.reward = out.env_reward(self.pool.reward_mode)
        return out

    def finish(self, truncated: bool = True) -> EpisodeOutcome:
        """End the episode from outside (e.g. a turn limit): the env's reward so far stands."""
        out = self.outcome
        if not out.done:
            out.truncated = truncated
            out.reward = out.env_reward(self.pool.reward_mode)
        return out

    def close(self) -> None:
        """Close the session on the worker and the connection (safe to call twice)."""
        if self._sid is not None and self._generation == self.pool._generations[self.worker]:
            try:
                self._client.request(ops.close(self._sid), timeout=5.0, ordered=False)  # as RemoteEnv's
            except (OpenEnvError, OSError):
                pass  # the worker may be gone; closing must not fail
        self._sid = None
        self._client.drop()


class EnvPool:
    """``num_workers`` workers of one env and the threads that run episodes on them.

    Args:
        env: Catalog name or id (``"coding"``, ``"OpenEnv/Git-v0"``).
        num_workers: Workers to start.
        provider: ``"auto"`` (default), ``"process"``, ``"docker"`` or ``"ray"``.
        concurrency: Episodes each worker runs at once (lanes per worker).
        episode_timeout: Seconds of env time one episode may take, reset to end (its
            requests; time between steps, e.g. a model generating, does not count), before
            it fails with ``"timeout"`` and its worker is replaced.
        step_timeout: Cap on one request, also bounded by what is left of the episode (None:
            60 s, or 30 s beyond the env's longest step where it declares one, as Git's
            120-s commands: see :func:`~openenv_gym.client.spec.call_timeout`).
        failure_reward: Reward of failed episodes (see
            :class:`~openenv_gym.trl.outcome.FailurePolicy`); default ``0.0``.
        reward_mode: ``"return"`` (sum of step rewards) or ``"final"`` (last step's
            reward). None (default): ``"final"`` for an env whose rewards score where the
            episode stands (Git without ``shaping``, Coding: ``reward_is_score`` in its spec),
            where a sum would pay an agent for lingering; ``"return"`` otherwise.
        provider_options: Keyword arguments for the provider (docker limits, ...).
        env_kwargs: The env's arguments as a mapping, for the names this class takes itself:
            ``EnvPool("coding", env_kwargs={"step_timeout": 5})`` sets the sandbox's limit.
        **kwargs: Keyword arguments for the env in every worker (``task=...``).

    Attributes:
        env_kwargs: The env's arguments in every worker (read, not changed: the workers
            have started with them).
        stats: Counter of ``"episodes"`` run and of each failure kind.
        failures: The last failed outcomes (newest last, at most 100).

    Example:
        >>> with EnvPool("echo", num_workers=1, provider="process") as pool:
        ...     [outcome] = pool.run([EpisodeJob([{"message": "abc"}])])
        >>> outcome.ok, round(outcome.reward, 1), dict(pool.stats)
        (True, 0.3, {'episodes': 1})
    """

    def __init__(self, env: str, num_workers: int = 4, *, provider: str = "auto",
                 concurrency: int = 1, episode_timeout: float = 120.0,
                 step_timeout: Optional[float] = None, failure_reward: FailureReward = 0.0,
                 reward_mode: Optional[str] = None, provider_options: Optional[dict[str, Any]] = None,
                 env_kwargs: Optional[dict[str, Any]] = None, **kwargs: Any) -> None:
        # InvalidRequestError (a ValueError): every error of the package is an OpenEnvError.
        if not is_int(num_workers, 1):
            raise InvalidRequestError(f"num_workers must be a positive int, got {num_workers!r}")
        if not is_int(concurrency, 1):
            raise InvalidRequestError(f"concurrency must be a positive int, got {concurrency!r}")
        if not (is_finite(episode_timeout) and episode_timeout > 0):
            # NaN would pass `<= 0` and disable the episode budget altogether.
            raise InvalidRequestError(f"episode_timeout must be a positive, finite number of seconds, "
                                      f"got {episode_timeout!r}")
        num_workers, concurrency = int(num_workers), int(concurrency)
        # Until the env's spec is known (checked now, before any worker starts).
        self.step_timeout = call_timeout({}, step_timeout, "step_timeout")
        if reward_mode is not None and reward_mode not in REWARD_MODES:
            raise InvalidRequestError(f"reward_mode={reward_mode!r}; use one of {list(REWARD_MODES)}")
        self.info = get_env_info(env)
        self.policy = FailurePolicy(failure_reward)
        #: How an episode's step rewards become its reward (``"return"`` or ``"final"``).
        self.reward_mode: str = reward_mode or "return"  # None: the env's spec decides, below
        env_kwargs = merge_env_kwargs(env_kwargs, kwargs)
        #: The env's arguments in every worker (the adapters read which task it plays).
        self.env_kwargs: dict[str, Any] = dict(env_kwargs)
        self.episode_timeout = float(episode_timeout)
        self.concurrency = concurrency
        self.stats: Counter[str] = Counter()
        self.failures: list[EpisodeOutcome] = []
        self._provider = get_provider(provider, untrusted=self.info.untrusted,
                                      **provider_options_dict(provider_options))
        self.provider_name = self._provider.name
        self.workers: list[Worker] = self._provider.start(self.info.name, num_workers, dict(env_kwargs))
        self._stop_workers = stop_when_dropped(self, self._provider, self.workers)
        self._generations = [0] * num_workers
        self._locks = [threading.Lock() for _ in range(num_workers)]
        #: Set by :meth:`close`: a lane failing after it (its worker stopped under it) must
        #: not start a replacement, which nothing would stop.
        self._closed = False
        self._stats_lock = threading.Lock()
        self._next_worker = itertools.count()
        self._executor = ThreadPoolExecutor(max_workers=num_workers * concurrency,
                                            thread_name_prefix="openenv-trl")
        client = BinaryClient(self.workers[0].address, self.step_timeout, timeout_name="step_timeout")
        try:
            spec = client.request(ops.spec())["spec"]
            self.spec: dict[str, Any] = spec
            #: Cap on one request, in seconds.
            self.step_timeout = call_timeout(spec, step_timeout, "step_timeout")
            # A server of another protocol (ProtocolError) stops the workers started for it.
            self.observation_space, self.action_space, _ = read_spec(spec)
        except BaseException:
            self.close()
            raise
        finally:
            client.close()
        if reward_mode is None:
            self.reward_mode = "final" if spec.get("reward_is_score") else "return"
        # One long-lived lane per (worker, slot): its session is reused across episodes.
        self._lanes: "queue.SimpleQueue[Episode]" = queue.SimpleQueue()
        for _ in range(concurrency):
            for w in range(num_workers):
                self._lanes.put(Episode(self, w))

    @property
    def num_workers(self) -> int:
        """How many workers the pool runs."""
        return len(self.workers)

    # -- scripted episodes ---------------------------------------------------------------
    def run(self, jobs: Sequence[EpisodeJob]) -> list[EpisodeOutcome]:
        """Run every job on a free lane, concurrently; never raises for an episode's fault.

        Args:
            jobs: The episodes to run.

        Returns:
            One :class:`~openenv_gym.trl.outcome.EpisodeOutcome` per job, in order.
        """
        self._check_open()
        return list(self._executor.map(self._run_one, jobs))

    def _run_one(self, job: EpisodeJob) -> EpisodeOutcome:
        lane = self._lanes.get()  # blocks until a lane is free: at most concurrency per worker
        try:
            out = lane.reset(job.options, job.seed)
            for action in job.actions:
                if out.done:
                    break
                out = lane.step(action)
            if not out.done:
                out = lane.finish(truncated=False)
            self._count_episodes(1)
            return out
        finally:
            self._lanes.put(lane)

    # -- externally driven episodes (multi-turn rollouts) ---------------------------------
    def open(self, n: int) -> list[Episode]:
        """Lease ``n`` sessions, spread round-robin over the workers.

        Close them with :meth:`Episode.close` (or :meth:`close_many`) when done.
        """
        self._check_open()
        return [Episode(self, next(self._next_worker) % self.num_workers) for _ in range(n)]

    def reset_many(self, episodes: Sequence[Episode], options: Sequence[Optional[dict[str, Any]]],
                   seeds: Sequence[Optional[int]]) -> list[EpisodeOutcome]:
        """Reset every episode concurrently (``options[i]``/``seeds[i]`` for episode i)."""
        self._check_open()
        return list(self._executor.map(lambda a: a[0].reset(a[1], a[2]), zip(episodes, options, seeds)))

    def step_many(self, episodes: Sequence[Episode], actions: Sequence[Any]) -> list[EpisodeOutcome]:
        """Step every episode with its action concurrently; ended episodes are left as they are."""
        self._check_open()
        return list(self._executor.map(lambda a: a[0].step(a[1]), zip(episodes, actions)))

    def close_many(self, episodes: Sequence[Episode]) -> None:
        """Close the sessions of leased episodes and count them."""
        for ep in episodes:
            ep.close()
        self._count_episodes(len(episodes))

    def _count_episodes(self, n: int) -> None:
        with self._stats_lock:
            self.stats["episodes"] += n

    # -- faults ----------------------------------------------------------------------------
    def _record_failure(self, episode: Episode, failure: _Failure) -> None:
        with self._stats_lock:
            self.stats[failure.kind] += 1
            self.failures = (self.failures + [episode.outcome])[-100:]
        logger.warning("episode on worker %d failed (%s): %s; reward %r", episode.worker,
                       failure.kind, failure, episode.outcome.reward)
        if failure.kind in ("timeout", "crash"):
            self._replace_worker(episode.worker, episode._generation)

    def _replace_worker(self, w: int, seen_generation: int) -> None:
        # A stuck worker may still be running the step that timed out: replace it rather
        # than let the next episode queue behind it. Episodes sharing it see a "crash".
        with self._locks[w]:
            if self._closed or self._generations[w] != seen_generation:
                return  # closing (its worker stops), or another lane already replaced it
            self._generations[w] += 1
            try:
                self.workers[w].restart()
            except Exception as exc:  # keep the pool usable; the next request reports it
                logger.error("could not restart worker %d: %s", w, exc)

    def _check_open(self) -> None:
        """Refuse a call on a closed pool (its workers are stopped).

        Raises:
            gym.error.ClosedEnvironmentError: :meth:`close` ran.
        """
        if self._closed:
            raise gym.error.ClosedEnvironmentError(
                f"this EnvPool ({self.info.name}) is closed; make a new one")

    def close(self) -> None:
        """Stop the threads and every worker (safe to call twice, and from another thread
        while leased episodes step: their failures then replace no worker)."""
        self._closed = True
        for lock in getattr(self, "_locks", ()):
            with lock:  # a replacement already under way finishes first, and is stopped below
                pass
        # The workers stop before the threads are waited for: a step in flight (a Git
        # command's 120 s, a program's loop) then fails at once instead of holding close()
        # -- and Ctrl-C out of a trainer's `with EnvPool(...)` -- until it ends.
        stopping = bool(getattr(self, "workers", None))
        if stopping:
            self._stop_workers()
        executor = getattr(self, "_executor", None)
        if executor is not None:
            executor.shutdown(wait=True)  # episodes not started yet find the pool closed
        if stopping:
            self.workers = []  # only now: a thread mid-request still indexes it
        lanes = getattr(self, "_lanes", None)
        while lanes is not None and not lanes.empty():
            # Each lane's connection now, not when the garbage collector gets to it (an
            # Episode and its pool refer to each other): 50 pools made and closed held 26 fds.
            lanes.get_nowait()._client.drop()

    def __enter__(self) -> "EnvPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"EnvPool(env={self.info.name!r}, provider={self.provider_name!r}, "
                f"num_workers={self.num_workers}, concurrency={self.concurrency})")
