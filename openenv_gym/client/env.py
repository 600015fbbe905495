"""``RemoteEnv``: an ordinary :class:`gymnasium.Env` whose reset and step run in a worker.

``gym.make("OpenEnv/Echo-v0")`` builds one; it starts a worker through a provider (or
attaches to a running server with ``base_url=``), reads the spaces from the worker's spec
and keeps one session on it.

Example:
    >>> import gymnasium as gym
    >>> import openenv_gym
    >>> env = gym.make("OpenEnv/Echo-v0", provider="process")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step({"message": "hello"})
    >>> obs["echo"], round(reward, 2)
    ('hello', 0.5)
    >>> env.close()
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import urllib.parse
import weakref
from typing import Any, Callable, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from openenv_gym.catalog import get_env_info
from openenv_gym.client.kwargs import (
    NO_LIMIT,
    add_time_limit,
    gym_make_shows_human,
    gym_make_time_limit,
    keep_no_limit,
    merge_env_kwargs,
    name_misplaced_timeout,
    name_misspelt_keywords,
    name_vector_keywords,
    take_render_mode,
)
from openenv_gym.client.spec import call_timeout, read_spec, with_served_values
from openenv_gym.client.transport import BinaryClient
from openenv_gym.errors import (
    InvalidActionError,
    InvalidRequestError,
    OpenEnvError,
    ProviderUnavailableError,
    ResetNeededError,
    SessionNotFoundError,
    WorkerConnectionError,
    WorkerCrashedError,
    WorkerError,
    WorkerTimeoutError,
    headline,
)
from openenv_gym.protocol import ops
from openenv_gym.protocol.wire import encode, oversized
from openenv_gym.providers import get_provider, provider_options_dict
from openenv_gym.providers.base import RESTART_ATTEMPTS, Provider, Worker, stop_when_dropped
from openenv_gym.spaces import from_wire, owned

__all__ = ["RemoteEnv", "ServedGenerator", "attach_address", "check_render_mode", "not_copyable"]

T = TypeVar("T")

#: What the next ``reset()`` does about a worker whose last call timed out.
_RESET_REPLACES = "call reset(), which replaces the worker"


def attach_address(base_url: str, timeout: float = 10.0) -> str:
    """The binary address of a running server: asked of its HTTP front, or given directly.

    Args:
        base_url: The server's HTTP address (``openenv-gym serve``), e.g.
            ``"http://127.0.0.1:8000"``, or a worker's binary address as ``openenv-gym start``
            and ``ps`` print it (``"unix:///tmp/.../w0.sock"``, ``"tcp://127.0.0.1:PORT"``).
        timeout: Seconds to wait for ``/health``.

    Returns:
        The binary address.

    Raises:
        InvalidRequestError: ``base_url`` is none of those forms.
        WorkerConnectionError: Nothing answers at ``base_url``.
        ProviderUnavailableError: The server offers no binary path.
    """
    parts = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
    if parts is not None and ((parts.scheme == "unix" and parts.path)
                              or (parts.scheme == "tcp" and parts.hostname and parts.port)):
        return base_url  # the binary path itself: the client's connect reports a dead one
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequestError(f"base_url must be the server's HTTP address, like "
                                  f"'http://127.0.0.1:8000', or a worker's binary address as "
                                  f"`openenv-gym ps` prints it ('unix:///...'), got {base_url!r}")
    url = base_url.rstrip("/") + "/health"
    # Only an attach needs HTTP: urllib.request pulls in ssl, http.client and email (~6 ms).
    from urllib.error import URLError
    from urllib.request import urlopen

    try:
        with urlopen(url, timeout=timeout) as resp:  # noqa: S310 (user's own server)
            health = json.load(resp)
    except (URLError, OSError, ValueError) as exc:
        raise WorkerConnectionError(f"no openenv_gym server answers at {base_url}: {exc}; start one "
                                    "with `openenv-gym serve ENV --port N`") from None
    address = health.get("binary")
    if not address:
        raise ProviderUnavailableError(f"the server at {base_url} serves no binary path")
    return address


def served_method(name: str, whose: str, invoke: Callable[[tuple, dict], Any]) -> Callable[..., Any]:
    """A stand-in for a served env's method, which cannot cross the wire: calling it runs
    ``invoke(args, kwargs)`` (the method, in the worker), as a local env hands out the bound
    method (``get_wrapper_attr``, SB3's ``get_attr``).

    Example:
        >>> served_method("twice", "a", lambda args, kwargs: 2 * args[0])(21)
        42
    """
    def method(*args: Any, **kwargs: Any) -> Any:
        return invoke(args, kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"{whose} {name}(), called in its worker."
    return method


class RemoteEnv(gym.Env):
    """A Gymnasium env served by an openenv_gym worker.

    Args:
        env: Catalog name or id (``"echo"``, ``"OpenEnv/Echo-v0"``).
        provider: ``"auto"`` (default), ``"process"``, ``"docker"`` or ``"ray"``.
        base_url: Attach to a running server instead of starting a worker.
        render_mode: Passed to the env in the worker (``"rgb_array"``, ``"ansi"``).
        timeout: Seconds any call may take before :class:`~openenv_gym.errors.WorkerTimeoutError`
            (None: 60, or longer for an env whose own step limit is longer, such as Git's
            120 s: see :func:`~openenv_gym.client.spec.call_timeout`).
        provider_options: Keyword arguments for the provider (e.g. docker limits).
        env_kwargs: Constructor arguments given as a mapping, as for
            :class:`~openenv_gym.vector.RemoteVectorEnv` (for a name this class takes itself).
        **kwargs: Keyword arguments for the env's constructor in the worker.

    Example:
        >>> env = RemoteEnv("echo", provider="process", max_steps=2)   # = gym.make(..., max_steps=2)
        >>> obs, info = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step({"message": "hey"})
        >>> obs["echo"], round(reward, 2), truncated
        ('hey', 0.3, False)
        >>> env.close()
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array", "ansi"]}

    def __init__(self, env: str = "echo", *, provider: str = "auto", base_url: str | None = None,
                 render_mode: str | None = None, timeout: float | None = None,
                 provider_options: dict[str, Any] | None = None,
                 env_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        env_kwargs = merge_env_kwargs(env_kwargs, kwargs)
        render_mode = take_render_mode(env_kwargs, render_mode)
        self.info = get_env_info(env)
        asked_limit = gym_make_time_limit(self)
        shows_human = gym_make_shows_human(self)
        if base_url is None:  # an attached server's env has the arguments it was served with
            add_time_limit(env_kwargs, self.info.time_limit_kwarg, asked_limit)
            self._made_without_limit = asked_limit == NO_LIMIT
        check_render_mode(render_mode)
        first_timeout = call_timeout({}, timeout)  # until the env's spec is known (checked now)
        self._provider: Provider | None = None
        self._worker: Worker | None = None
        self._session = _Session()
        self._stuck = False
        #: Why the last start of a replacement worker failed (None: none failed since the
        #: last one started), which a step on the dead worker names.
        self._replace_failure: str | None = None
        self._closed = False
        self._owner_pid = os.getpid()
        # Held while the worker is replaced or stopped: a close() on another thread during a
        # reset's replacement must stop the new worker, not leave it running unowned.
        self._lifecycle = threading.Lock()
        if base_url is not None:
            if env_kwargs:
                raise TypeError(f"env arguments {sorted(env_kwargs)} cannot be applied to a running "
                                f"server at {base_url}; pass them to `openenv-gym serve` instead")
            address = attach_address(base_url, first_timeout)
            self.provider_name = "attached"
        else:
            self._provider = get_provider(provider, untrusted=self.info.untrusted,
                                          **provider_options_dict(provider_options))
            self.provider_name = self._provider.name
            try:
                [self._worker] = self._provider.start(
                    self.info.name, 1, dict(env_kwargs, **({"render_mode": render_mode} if render_mode else {})))
            except OpenEnvError as exc:
                name_misplaced_timeout(exc, env_kwargs, "gym.make")
                name_misspelt_keywords(exc, "gym.make", type(self))
                name_vector_keywords(exc)
                if shows_human and isinstance(exc, InvalidRequestError):
                    # The worker refused 'rgb_array', a mode the caller never gave.
                    exc.args = (f"{exc}\n(gym.make asked the env for render_mode='rgb_array' for your "
                                "render_mode='human', to show its frames in a window of yours "
                                "(Gymnasium's HumanRendering): an env that draws no rgb_array "
                                "frames cannot be shown so; use a render mode it takes)",)
                raise
            self._stop_worker = stop_when_dropped(self, self._provider, [self._worker])
            address = self._worker.address
        self._client = BinaryClient(address, first_timeout)
        if self._worker is None:
            # Attached: the server outlives this env, so a dropped env (a notebook cell run
            # again) ends its session when collected, as a started env stops its worker.
            weakref.finalize(self, _end_session, self._client, self._session)
        try:
            self._load_spec()
            if base_url is not None:
                self._refuse_longer_limit(base_url, asked_limit)
            self._client.timeout = call_timeout(self.remote_spec, timeout)
        except BaseException:
            self.close()
            raise
        self.render_mode = render_mode

    #: Set by ``gym.make`` (:attr:`spec`).
    _spec: EnvSpec | None = None
    #: Whether ``gym.make`` was given ``max_episode_steps=-1`` (:attr:`spec` keeps it).
    _made_without_limit = False

    @property
    def spec(self) -> EnvSpec | None:
        """The ``EnvSpec`` ``gym.make`` made this env from, its ``max_episode_steps`` the served
        env's own limit where ``gym.make`` was given none (CartPole-v1's 500, as a local env's
        ``TimeLimit`` shows it; the served env applies it, so ``gym.make`` wraps none here),
        and its ``reward_threshold`` the served env's (CartPole-v1's 475) where it has one."""
        return self._spec

    @spec.setter
    def spec(self, value: EnvSpec | None) -> None:
        if value is not None:
            value = with_served_values(value, getattr(self, "remote_spec", {}))
            if self._made_without_limit:
                value = keep_no_limit(value, self.info.time_limit_kwarg)
        self._spec = value

    def _refuse_longer_limit(self, base_url: str, asked: int | None) -> None:
        """Refuse a ``gym.make`` limit (``asked``) longer than the attached server's own, which
        ends the episodes first: the client's ``TimeLimit`` can shorten them, never lengthen them."""
        served = self.remote_spec.get("max_episode_steps")
        if asked is None or served is None or asked != NO_LIMIT and asked <= served:
            return
        kwarg = self.info.time_limit_kwarg or "max_episode_steps"
        raise InvalidRequestError(
            f"the server at {base_url} ends episodes after {served} steps, so "
            f"max_episode_steps={asked} cannot take effect on it; ask for at most {served}, or "
            f"serve the env with the limit you want (`openenv-gym serve {self.info.name} "
            f"--env-kwargs '{{\"{kwarg}\": N}}'`)")

    def _load_spec(self) -> None:
        spec = self._client.request(ops.spec())["spec"]
        served = spec.get("env")
        if served is not None and served != self.info.name:
            # Attached by base_url to a server of another env: its spaces would pass for ours.
            from openenv_gym.catalog import get_env_info

            raise InvalidRequestError(
                f"the server attached to serves env {served!r}, not {self.info.name!r}; attach "
                f"with gym.make({get_env_info(served).gym_id!r}, base_url=...)")
        self.remote_spec: dict[str, Any] = spec
        self.observation_space, self.action_space, self.metadata = read_spec(spec)

    @property
    def _sid(self) -> str | None:
        # A forked child's copy has no session until its own reset: the parent's is the
        # parent's episode, which the child's calls must not step, reset or end.
        session = self._session
        if session.pid != os.getpid() or (session.connection is not None and self._session_dropped()):
            return None
        return session.sid

    @_sid.setter
    def _sid(self, value: str | None) -> None:
        session = self._session
        session.sid, session.pid = value, os.getpid()
        # A fork's session ends with this connection: a dropped one (a call that timed out
        # or was interrupted) took the session along, and the next reset starts a new one.
        session.connection = self._client.connection if value is not None and self._forked() else None

    def _forked(self) -> bool:
        """Whether this is a forked child's copy of the env (its sessions are bound to its
        connections; it may not stop or replace the parent's worker)."""
        return os.getpid() != self._owner_pid

    def _session_dropped(self) -> bool:
        """Whether the connection a fork's (bound) session lives on was dropped since."""
        return self._client.connection is not self._session.connection

    def _owns_worker(self) -> bool:
        """Whether this process started the worker (not a fork's copy): only then may it
        replace the worker, which would otherwise stop the parent's under it."""
        return self._worker is not None and not self._forked()

    @property
    def session_id(self) -> str | None:
        """The id of this env's session on the worker (None before the first reset)."""
        return self._sid

    @property
    def worker(self) -> Worker | None:
        """The worker serving this env (:class:`~openenv_gym.providers.base.Worker`), as a
        vector env's :attr:`~openenv_gym.vector.RemoteVectorEnv.workers` holds them: the same
        object after a replacement (its ``pid``, ``address`` and ``restarts`` then the new
        worker's). None when attached to a server (``base_url=``) or closed.

        Example:
            >>> import gymnasium as gym
            >>> env = gym.make("OpenEnv/Echo-v0", provider="process")
            >>> worker = env.unwrapped.worker
            >>> worker.alive(), worker.pid > 0, worker.restarts
            (True, True, 0)
            >>> env.close()
            >>> env.unwrapped.worker is None
            True
        """
        return self._worker

    def _restart_if_dead(self, grace: float = 2.0) -> bool:
        worker = self._worker  # close() on another thread may set it to None meanwhile
        if worker is None or not self._owns_worker():
            return False
        # Called after the connection broke: a container's state lags its process's exit
        # by some milliseconds, so give the engine ``grace`` seconds to report it dead.
        deadline = time.monotonic() + grace
        while worker.alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        self._replace_worker()
        return True

    def _explained(self, exc: WorkerError) -> WorkerError:
        """``exc`` with what is known of the worker: how it ended, its last log lines, and
        that the next ``reset()`` tries to start a fresh one (what the vector env reports too):
        only tries, as the provider may no longer start one (Ray shut down, Docker's engine
        stopped), or its start may fail (then this says so)."""
        worker = self._worker
        if worker is None:  # attached to a server we do not own: nothing more to tell
            return exc
        try:
            alive = worker.alive_after()
        except (ProviderUnavailableError, OSError):
            # A Docker engine that is down, or its connection broken: it must not mask `exc`.
            return exc
        reason, tail = worker.post_mortem()
        state = "is still running" if alive else f"stopped{': ' + reason if reason else ''}"
        if self._forked() and not alive:
            # The parent stopped it (closed its env, or exited): a fork's copy may not replace it.
            text = f"{exc}. The worker {state}; " + not_replaceable_in_fork(
                "it", self._owner_pid, "make the child's own env (gym.make(env.spec))")
        else:
            text = f"{exc}. The worker {state}; {self._next_reset_hint()}"
        if tail:
            text += f"\nlast worker log lines:\n{tail}"
        return type(exc)(text)

    def _next_reset_hint(self, promise: str = "the next reset() tries to start a fresh one.") -> str:
        """What the next ``reset()`` does about a dead or hung worker: ``promise``, unless the
        last reset's replacement failed to start (then that failure, which a promise of a
        fresh worker would hide)."""
        failure = self._replace_failure
        if failure is None:
            return promise
        return f"the last reset() could not start a fresh one ({failure})."

    def _worker_reason(self) -> str:
        """The provider's word on why this env's own worker does not serve (``"paused (...)"``,
        an exit), ``""`` while it runs, or when it cannot be had: one look at it (a ``docker
        inspect``), which never raises (an engine that is down must not mask another error)."""
        worker = self._worker
        if worker is None or not self._owns_worker():
            return ""
        try:
            return worker.exit_reason()
        except (ProviderUnavailableError, OSError):
            return ""

    def _timed_out(self, exc: WorkerTimeoutError) -> WorkerTimeoutError:
        """Mark the worker hung (the next reset() replaces it) and return ``exc`` with what its
        provider tells of it (a paused container) and what to do: asked only now, the normal
        path costs no engine call."""
        self._stuck = True
        if not self._owns_worker():
            return exc  # a fork's copy replaces nothing (see reset())
        reason = self._worker_reason()
        state = f"the worker's state: {reason}; " if reason else ""
        return type(exc)(f"{exc}; {state}{self._next_reset_hint(_RESET_REPLACES)}")

    def _replace_worker(self) -> None:
        with self._lifecycle:
            if self._closed or self._worker is None:
                raise self._closed_error()  # closed on another thread: nothing to replace
            try:
                self._worker.replace()
            except Exception as exc:
                self._note_failed_replacement(exc)
                raise
            self._replace_failure = None
            self._client.close()  # with a call the old worker may still have been running
            self._client.address = self._worker.address
            self._sid = None
            self._stuck = False

    def _note_failed_replacement(self, exc: Exception) -> None:
        """Say in ``exc`` (raised by :meth:`Worker.replace`) that starting a replacement worker
        failed and that the next ``reset()`` tries again, as the vector env does, and remember
        it for the steps until then (they would otherwise promise a fresh worker)."""
        if isinstance(exc, ProviderUnavailableError):
            # Nowhere to start one (Ray shut down, Docker's engine stopped): its own text says
            # what to do, and the type stays, as the vector env raises it.
            self._replace_failure = str(exc)
            return
        self._replace_failure = f"{headline(exc)}; the next reset() tries again"
        note = (f"(starting a replacement worker failed {RESTART_ATTEMPTS} times: the next "
                "reset() tries to start one again)")
        if isinstance(exc, OpenEnvError):
            # Its own type (the env's error for a constructor that raised), so an `except`
            # for it still catches it; only the text grows.
            exc.args = (f"{exc}\n{note}",)
        else:
            exc.add_note(note)  # another's (an OSError's args carry its errno): left as it is

    @property
    def np_random(self) -> Any:
        """The served env's ``np_random`` once it lives (from the first reset): a
        :class:`ServedGenerator` whose draws run in the worker, on the Generator the env's own
        resets and steps use, as a local wrapper's ``env.np_random`` draws do."""
        if self._sid is None:
            return super().np_random
        return ServedGenerator(lambda method, args, kwargs: self.call("np_random_call", method, *args, **kwargs))

    @np_random.setter
    def np_random(self, value: Any) -> None:
        # Before the first reset too: the served env is made by that reset, with a Generator
        # of its own; one kept here would be ignored without a word.
        raise TypeError("the served env's np_random lives in its worker and a Generator cannot "
                        "cross the wire: seed it with reset(seed=...)")

    @property
    def np_random_seed(self) -> int:
        """The served env's ``np_random_seed`` (the seed its Generator was made from; the
        entropy it drew itself after an unseeded first reset), from the first reset on."""
        if self._sid is None:
            return super().np_random_seed
        return self._session_request(ops.get_attr, "np_random_seed")["value"]

    def _seed_after_restart(self, seed: int | None) -> int | None:
        """The seed for the first reset on a fresh worker: the caller's, else one drawn from
        the seeds given so far (the dead worker's Generator, which ``reset()`` would have
        continued, is lost), so a seeded run stays reproducible through restarts."""
        if seed is not None or self._np_random is None:
            return seed
        return int(self._np_random.integers(2**63))

    def _reset_request(self, seed: int | None, options: dict[str, Any] | None,
                       fresh: bool) -> dict[str, Any]:
        """The reset request: in this env's session, or, for a fresh served env (a new worker
        or session), in a new one seeded from the seeds given so far."""
        # A fork's copy (a DataLoader worker, which may exit without close()) binds its new
        # session to its connection: the worker ends it when the child goes.
        bound = self._forked()
        if fresh:
            return ops.reset(None, self._seed_after_restart(seed), options, bound=bound)
        return ops.reset(self._sid, seed, options, bound=bound)

    def _reset_call(self, seed: int | None, options: dict[str, Any] | None,
                    fresh: bool) -> dict[str, Any]:
        """Send the reset request (see :meth:`_reset_request`). One that creates a session,
        cut short (Ctrl-C), leaves a session whose id only its late reply tells: it is
        marked, and the next reset or close() ends it (see :func:`_learn_unknown_session`)."""
        request = self._reset_request(seed, options, fresh)
        try:
            return self._request(request)
        except BaseException:
            # A bound one (a fork's copy's) ends with its connection; a marked reset that made
            # no session (refused, never sent) costs nothing: the late reply tells no id.
            if "sid" not in request and not request.get("bound"):
                self._session.unknown = True
            raise

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Start an episode in the worker (replacing a worker that died or hung first).

        Args:
            seed: Seeds the served env's RNG (as ``Env.reset(seed=...)``), and this env's own.
            options: Passed to the served env's ``reset``.

        Returns:
            ``(observation, info)`` as in Gymnasium.
        """
        self._check_open()
        super().reset(seed=seed)  # refuses what Gymnasium refuses (a negative seed, a float)
        if seed is not None:
            seed = int(seed)  # True is the int 1 to Gymnasium (seed=True seeds as 1): not on the wire
        fresh = False  # a new served env (fresh worker or session): its Generator starts anew
        if self._stuck and self._owns_worker():
            # The last call timed out: the worker is hung (paused, deadlocked), not dead.
            self._replace_worker()
            fresh = True
        try:
            if self._session.unknown:  # a reset cut short made a session: end it first
                _close_session(self._client, self._unless_closed(
                    _learn_unknown_session, self._client, self._session, self._client.timeout))
            out = self._reset_call(seed, options, fresh)
        except SessionNotFoundError:
            fresh = True
            out = self._reset_call(seed, options, fresh)
        except (WorkerCrashedError, WorkerConnectionError) as exc:
            if not self._restart_if_dead():
                if self._forked():
                    raise self._explained(exc) from exc  # why a fork's copy cannot go on
                raise
            fresh = True
            out = self._reset_call(seed, options, fresh)
        except WorkerTimeoutError as exc:
            raise self._timed_out(exc) from exc
        self._sid = out["sid"]
        self._stuck = False  # the worker answered: a fork's copy, which replaces none, steps on
        info = owned(out["info"])
        if fresh and self._worker is not None:
            info = {**info, "worker_restarted": True}
        # keep_dtype: an env that strays from its space's dtype (float64 for a float32 Box) is
        # handed over as it made it, as locally (where the env checker warns of it).
        return from_wire(out["obs"], self.observation_space, keep_dtype=True), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Take a step in the worker.

        Args:
            action: An element of :attr:`action_space` (a dict for model envs such as Echo).

        Returns:
            ``(observation, reward, terminated, truncated, info)`` as in Gymnasium.

        Raises:
            InvalidActionError: The action does not fit (the session stays usable).
            WorkerError: The worker died or timed out.
        """
        self._check_open()
        if self._sid is None:
            if self._session.sid is not None and self._session.pid == os.getpid():
                raise ResetNeededError(
                    "the connection to the worker dropped (a call timed out or was interrupted), "
                    "which ended this forked child's session: call reset()")
            if self._session.sid is not None:
                raise ResetNeededError(
                    f"this env's episode belongs to process {self._session.pid}, which made it or "
                    "reset it; a forked child's copy starts an episode of its own: call reset()")
            raise ResetNeededError("call reset() before step()")
        if self._stuck and self._worker is not None:
            # The worker may still be busy with the call that timed out: a step would only
            # wait out its timeout again behind it.
            raise ResetNeededError("the last call timed out (the worker is hung, or still busy with "
                                   f"it); {self._next_reset_hint(_RESET_REPLACES)}")
        frame = encode(ops.step(self._sid, action))
        if (why := oversized(frame, self._client.max_frame)) is not None:
            # Refused as the worker refuses a too-long action, before anything is sent: the
            # worker would refuse the frame unread, with a ProtocolError, after draining it.
            raise InvalidActionError(f"the action is too large: the step request is {why}; "
                                     "nothing was sent and the env did not step")
        try:
            out = self._unless_closed(self._client.request_frame, frame)
        except WorkerTimeoutError as exc:
            raise self._timed_out(exc) from exc
        except (WorkerCrashedError, WorkerConnectionError) as exc:
            raise self._explained(exc) from exc
        obs = from_wire(out["obs"], self.observation_space, keep_dtype=True)  # as in reset()
        return obs, out["reward"], out["terminated"], out["truncated"], owned(out["info"])

    def render(self) -> Any:
        """The worker env's ``render()`` (a frame for ``rgb_array``, text for ``ansi``)."""
        self._check_open()
        if self.render_mode is None or self._sid is None:
            return None
        return owned(self._worker_request(ops.render(self._sid))["frame"])

    def state(self) -> dict[str, Any]:
        """The session's state (``GET /state``): episode id, step count, env fields."""
        return self._session_request(ops.state)["state"]

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call a method of the served env in the worker, or read an attribute (as
        ``VectorEnv.call`` does for each sub-env); values cross the wire.

        On Atari-v0, ``env.unwrapped.call("get_action_meanings")`` lists the actions.

        Args:
            name: The method or attribute of the served env.
            *args: The method's positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What the method returned, or the attribute's value.

        Raises:
            gym.error.ResetNeeded: No session yet: the served env lives from the first reset.

        Example:
            >>> import gymnasium as gym
            >>> env = gym.make("OpenEnv/Echo-v0", provider="process", max_steps=7)
            >>> _ = env.reset(seed=0)
            >>> env.unwrapped.call("max_steps")          # an attribute of the served EchoEnv
            7
            >>> env.close()
        """
        return self._session_request(ops.call, name, args, kwargs)["value"]

    def get_wrapper_attr(self, name: str) -> Any:
        """An attribute of this client, else of the served env in the worker (``gravity`` of a
        Gym-v0 CartPole), as Gymnasium's ``get_wrapper_attr`` reaches the innermost env.

        Gymnasium's own names (``spec``, ``metadata``, ``np_random``, ...) and this client's
        instance attributes (the spaces and render mode it was given) are the client's. A
        name this class adds (``state``, ``call``) is the served env's where it has one, as
        locally (CartPole's ``state`` array), else the client's.

        Args:
            name: The attribute.

        Returns:
            Its value.

        Raises:
            AttributeError: Neither has it (or there is no served env yet: before a reset).
        """
        own = hasattr(self, name)
        if own and (name.startswith("_") or self._client_name(name) or self._closed or self._sid is None):
            return getattr(self, name)
        if name.startswith("_"):
            # The worker serves public names only: a private one is nobody's, as locally.
            raise AttributeError(f"{name!r} is not an attribute of this RemoteEnv (a served env's "
                                 "private attributes are not reachable)")
        if self._closed:  # an AttributeError still: has_wrapper_attr answers False
            raise AttributeError(f"{name!r} is not an attribute of this RemoteEnv, and its served "
                                 "env ended with close(): make another env to read it")
        if self._sid is None:
            raise AttributeError(f"{name!r} is not an attribute of this RemoteEnv, and its served "
                                 "env lives from the first reset: call reset() first")
        try:
            reply = self._session_request(ops.get_attr, name)
        except AttributeError:
            if own:  # ``call``, ``session_id``: the served env has no such name
                return getattr(self, name)
            raise
        if reply.get("callable"):
            # A method of the served env (``get_action_meanings``): a stand-in that calls it in
            # the worker, as the bound method a local env hands out (SyncVectorEnv.call, SB3's
            # env_method and Gymnasium's play() call what this returns).
            return self._served_method(name)
        return reply["value"]

    def _client_name(self, name: str) -> bool:
        """Whether ``name`` is this client's before the served env's: one Gymnasium's ``Env``
        has, or an instance attribute of this client. Another of this class's names (the
        method ``state``) must not hide the served env's (CartPole's ``state``), and setting
        one here would change nothing the served env does."""
        return hasattr(gym.Env, name) or name in vars(self)

    def _served_method(self, name: str) -> Callable[..., Any]:
        return served_method(name, "the served env's",
                             lambda args, kwargs: self._session_request(ops.call, name, args, kwargs)["value"])

    def has_wrapper_attr(self, name: str) -> bool:
        """Whether :meth:`get_wrapper_attr` finds ``name`` (on this client, or on the served
        env once it lives), so Gymnasium's ``has_wrapper_attr`` agrees with it.

        Args:
            name: The attribute."""
        try:
            self.get_wrapper_attr(name)
        except AttributeError:
            return False
        except TypeError:
            return True  # the served env has it, but its value cannot cross the wire (``ale``)
        return True

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        """Set an attribute where :meth:`get_wrapper_attr` reads it: on this client for
        Gymnasium's names, its instance attributes and private names, else on the served env
        in the worker (``gravity``, CartPole's ``state``: the dynamics change).

        Args:
            name: The attribute.
            value: Its new value.
            force: Set it even where it does not exist yet (on the served env).

        Returns:
            Whether it was set (``force=False``: only where the attribute exists).

        Raises:
            gym.error.ResetNeeded: ``force`` and no served env yet (before a reset).
        """
        if self._client_name(name) or name.startswith("_"):
            # A private name is the client's own (the worker serves public names only).
            return super().set_wrapper_attr(name, value, force=force)
        if self._sid is None:
            if not force:
                return False
            raise ResetNeededError(f"cannot set {name!r} before reset(): the served env "
                                   "lives from the first reset")
        if not force:
            try:
                self._session_request(ops.get_attr, name)
            except AttributeError:
                return False
        self._session_request(ops.set_attr, name, value)
        return True

    def _session_request(self, build: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        """Send ``build(sid, *args)`` (a :mod:`~openenv_gym.protocol.ops` builder) in this
        env's session; the reply's arrays are the caller's to write into (a ``call``'s value)."""
        self._check_open()
        if self._sid is None:
            raise ResetNeededError(f"call reset() before {build.__name__}(): the served env "
                                   "lives from the first reset")
        return owned(self._worker_request(build(self._sid, *args)))

    def _request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send ``message`` (every call of this env goes through here, but a step, whose frame
        :meth:`step` encodes and measures first; see :meth:`_unless_closed`)."""
        return self._unless_closed(self._client.request, message)

    def _worker_request(self, message: dict[str, Any]) -> dict[str, Any]:
        """:meth:`_request` for the calls besides reset and step (render, state, call,
        attributes): a dead or hung worker's error says what step's says, how the worker
        ended and that reset() replaces it, not only that its socket refused us."""
        try:
            return self._request(message)
        except WorkerTimeoutError as exc:
            raise self._timed_out(exc) from exc
        except (WorkerCrashedError, WorkerConnectionError) as exc:
            raise self._explained(exc) from exc

    def _unless_closed(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, talking to the worker; one that :meth:`close` on another thread
        ended raises ``ClosedEnvironmentError``, not a worker error."""
        try:
            return call(*args)
        except (WorkerCrashedError, WorkerConnectionError) as exc:
            if self._closed:  # close() ran meanwhile, on another thread
                raise self._closed_error() from exc
            raise

    def __reduce__(self) -> Any:
        raise not_copyable(self)

    def __getattr__(self, name: str) -> Any:
        # Only names neither this client nor gym.Env has reach here. Locally
        # ``env.unwrapped.gravity`` is the env's own; here the served env's attributes are
        # read by request, never behind a plain attribute (hasattr() probes would each cost a
        # round trip), so the error says where they are.
        hint = "" if name.startswith("_") else (
            f"; the served env's attribute is read with env.get_wrapper_attr({name!r}) and its "
            f"method called with env.unwrapped.call({name!r}, ...), after the first reset")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}{hint}",
                             name=name, obj=self)

    def _closed_error(self) -> gym.error.ClosedEnvironmentError:
        return gym.error.ClosedEnvironmentError(
            f"this RemoteEnv ({self.info.name}) is closed; make a new one with gym.make")

    def _check_open(self) -> None:
        if self._closed:
            # Its worker is stopped: a call would fail on a missing socket, or start nothing.
            raise self._closed_error()

    def _session_endable(self) -> bool:
        """Whether :meth:`close` ends the session by a request: there is one, and its worker
        serves. A worker of ours that does not (paused, dead) cannot answer, and a paused one
        would hold close() for the request's 5 s timeout; stopping it ends the session."""
        session = self._session
        if session.sid is None and not session.unknown:
            return False  # nothing to end: the worker need not be looked at
        return not self._worker_reason()

    def close(self) -> None:
        """Close the session and stop the worker this env started. Safe to call twice, and
        from another thread while a call is in flight (that call raises
        ``ClosedEnvironmentError``)."""
        self._closed = True
        client = getattr(self, "_client", None)
        try:
            if client is not None:
                if client.lock.acquire(blocking=False):
                    try:
                        if self._session_endable():
                            # Not a fork's copy's. An attached server outlives this env: the
                            # reset cut short is waited for, to end a session it made.
                            _end_session(client, self._session,
                                         settle=5.0 if self._worker is None else 0.0)
                        client.close()
                    finally:
                        client.lock.release()
                else:
                    # Another thread's call is in flight: end it now; stopping the worker
                    # ends the session (an attached server's expires, or goes at collection).
                    client.interrupt()
        finally:
            # A fork's copy stops nothing (its parent's workers), so it need not wait for a
            # lock a parent's thread may have held at the fork.
            with self._lifecycle if not self._forked() else contextlib.nullcontext():
                if self._worker is not None:
                    self._stop_worker()
                    self._worker = None
            super().close()


def check_render_mode(render_mode: str | None) -> None:
    """Refuse ``render_mode="human"``: a worker has no display, so the served env would draw
    into nothing (each step paced at its ``render_fps``) and ``render()`` give None.

    Raises:
        InvalidRequestError: ``render_mode`` is ``"human"``.
    """
    if render_mode == "human":
        raise InvalidRequestError(
            "render_mode='human' cannot be served: a worker has no display. Use "
            "gym.make(id, render_mode='human') (Gymnasium shows the served env's rgb_array "
            "frames in a window of yours), or render_mode='rgb_array' and show render()'s frames")


class ServedGenerator:
    """A served env's ``np_random`` as the trainer sees it: every draw (``integers``,
    ``uniform``, ``random``, ...) runs on the ``numpy.random.Generator`` in the worker, so a
    wrapper drawing from ``env.np_random`` (``StickyAction``) advances the Generator the
    env's own resets and steps use, as it does locally. One round trip per draw.

    Args:
        draw: ``draw(method, args, kwargs)`` runs one call in the worker and returns its value.

    Example:
        >>> rng = ServedGenerator(lambda m, a, k: getattr(np.random.default_rng(0), m)(*a, **k))
        >>> int(rng.integers(10)) == int(np.random.default_rng(0).integers(10))
        True
    """

    def __init__(self, draw: Callable[[str, tuple, dict], Any]) -> None:
        self._draw = draw

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not callable(getattr(np.random.Generator, name, None)):
            raise AttributeError(f"{name!r}: a served env's np_random offers the Generator's draws "
                                 "(integers, random, uniform, choice, ...), run in its worker")

        def draw(*args: Any, **kwargs: Any) -> Any:
            if name == "shuffle" or kwargs.get("out") is not None:
                # The worker would change its own copy of the array and the caller's would stay
                # as it was (a list came back unshuffled, without a word).
                raise TypeError(f"np_random.{name}() would write into your array, which the "
                                "served env's Generator in its worker cannot change: use the "
                                "value it returns (x = env.np_random.permutation(x) for "
                                "shuffle(x); a draw without out=)")
            return self._draw(name, args, kwargs)
        return draw

    def __repr__(self) -> str:
        return "ServedGenerator(the served env's np_random, in its worker)"


class _Session:
    """The id of a RemoteEnv's session, shared with the finalizer that ends it."""

    __slots__ = ("sid", "pid", "connection", "unknown")

    def __init__(self) -> None:
        self.sid: str | None = None
        #: The process whose session ``sid`` is (a fork's copy of the env has its own).
        self.pid = os.getpid()
        #: A fork's session's connection (None: the owner's): the worker ends the session
        #: when it closes.
        self.connection: Any = None
        #: Whether a reset that creates a session was cut short (Ctrl-C): the session it made
        #: has an id only its late reply tells, and nobody else would end it.
        self.unknown = False


def _end_session(client: BinaryClient, session: _Session, settle: float = 5.0) -> None:
    """End ``session`` on the worker, and one a reset cut short made (waiting up to ``settle``
    seconds for that reset to finish: see :func:`_learn_unknown_session`)."""
    # A fork's copy of the env lets go of the parent's session (still in use) and ends only
    # the one it opened itself.
    if os.getpid() != session.pid:
        return
    if session.unknown:
        with contextlib.suppress(OpenEnvError, OSError):  # the worker hung or gone: closing must not fail
            _close_session(client, _learn_unknown_session(client, session, settle))
    _close_session(client, session.sid)
    session.sid = None


def _learn_unknown_session(client: BinaryClient, session: _Session, timeout: float) -> str | None:
    """The id of the session a reset cut short made (``session.unknown``), from that reset's
    late reply once its worker has finished it (waiting up to ``timeout`` seconds); None
    when it made none or its reply cannot be had. Either way it is no longer looked for.

    Raises:
        WorkerTimeoutError: The worker did not finish that reset within ``timeout``.
    """
    session.unknown = False
    reply = client.settle(timeout)
    return reply.get("sid") if reply is not None and reply.get("ok") else None


def _close_session(client: BinaryClient, sid: str | None) -> None:
    """Close session ``sid`` (None: nothing to close) on ``client``'s worker."""
    if sid is None:
        return
    try:
        # Unordered: a call cut short (Ctrl-C) need not finish first, it finds its session gone.
        client.request(ops.close(sid), timeout=5.0, ordered=False)
    except (OpenEnvError, OSError):
        pass  # the worker may already be gone; closing must not fail


def not_replaceable_in_fork(what: str, owner_pid: int, instead: str) -> str:
    """Why a forked child's copy of an env cannot replace ``what`` (a worker of the process
    ``owner_pid`` that made the env), and what it does ``instead``.

    Example:
        >>> not_replaceable_in_fork("worker 0", 42, "make the child's own vector env")
        "a forked child cannot replace worker 0: it is process 42's, which made this env; make the child's own vector env"
    """
    return f"a forked child cannot replace {what}: it is process {owner_pid}'s, which made this env; {instead}"


def not_copyable(env: Any) -> TypeError:
    """The error for pickling or copying an env that holds live worker connections.

    Pickle and ``copy`` would otherwise fail on a lock or a socket deep inside, saying nothing
    of what to do; another env is made with the same ``spec``.
    """
    return TypeError(f"a {type(env).__name__} holds live connections to its workers, so it cannot "
                     "be pickled or copied; make another from its spec: gym.make(env.spec) or "
                     "gym.make_vec(...) with the same arguments")
