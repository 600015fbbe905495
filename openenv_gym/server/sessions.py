"""Sessions: the env instances one server hosts, with idle expiry and a size limit.

Example:
    >>> from openenv_gym.envs.echo.env import EchoEnv
    >>> manager = SessionManager(EchoEnv, max_sessions=1)
    >>> session = manager.create()
    >>> manager.get(session.id) is session
    True
    >>> manager.close_all()
"""

from __future__ import annotations

import collections
import reprlib
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from openenv_gym._text import short_repr
from openenv_gym.errors import (
    InvalidRequestError,
    ResetNeededError,
    SessionLimitError,
    SessionNotFoundError,
)

__all__ = ["Session", "SessionManager", "DEFAULT_MAX_SESSIONS", "DEFAULT_IDLE_TIMEOUT"]

if TYPE_CHECKING:  # the CLI reads the defaults below without loading the env contract
    from openenv_gym.envs.base import Environment

#: Most sessions one server hosts at once (``--max-sessions``; the CLI and workers share it).
DEFAULT_MAX_SESSIONS = 256
#: Seconds after its last call that an idle session closes (``--idle-timeout``).
DEFAULT_IDLE_TIMEOUT = 600.0

#: How many recent steps each session remembers for ``/web``.
HISTORY = 50


@dataclass(eq=False)
class Session:
    """One env instance and its episode bookkeeping.

    Two locks: :attr:`lock` is held for each call into the env (a Coding step may hold it
    for a minute); :attr:`book` only while the bookkeeping fields below change or are read
    together, so ``/web`` and ``/sessions`` read them without waiting for a step in flight.

    Args:
        id: The session id clients send.
        env: The environment.
    """

    id: str
    env: Environment
    #: Held for every call into the env: no two threads ever use it at once.
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: When a call last started or (reset, step) ended: idle expiry counts from it.
    last_used: float = field(default_factory=time.monotonic)
    book: threading.Lock = field(default_factory=threading.Lock)
    episode_id: str | None = None
    episode: int = 0
    step_count: int = 0
    episode_return: float = 0.0
    #: Whether the episode ended (terminated or truncated): steps are refused until a reset.
    done: bool = False
    returns: collections.deque = field(default_factory=lambda: collections.deque(maxlen=HISTORY))
    history: collections.deque = field(default_factory=lambda: collections.deque(maxlen=HISTORY))
    last_obs: Any = None
    #: Set once the session left its manager's table; calls that waited for it are refused.
    closed: bool = False
    #: What ``/web`` last rendered of the env, as ``(episode, step_count, view)``.
    view: tuple[int, int, Any] | None = None

    def reset(self, seed: Any = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        """Reset the env and start an episode.

        Args:
            seed: None or a non-negative int (as decoded from the wire: checked here).
            options: None or a mapping, passed to the env.

        Returns:
            The observation (as it crosses the wire) and the info.

        Raises:
            InvalidRequestError: A bad seed or options.
        """
        if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0):
            raise InvalidRequestError(f"seed must be a non-negative integer or null, got {seed!r}")
        if options is not None and not isinstance(options, dict):
            raise InvalidRequestError(f"options must be a mapping or null, got {type(options).__name__}")
        with self.lock:
            self._check_open()
            obs, info = _returned("reset", self.env.reset(seed=None if seed is None else int(seed),
                                                          options=options))
            obs = self.env.observation_to_wire(obs)
            # Before the episode starts: a refused first reset leaves no session behind.
            self.env.check_output("reset", obs, info)
            self.begin_episode(obs)
        return obs, info

    def step(self, action: Any, parsed: bool = False) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step the env with an action.

        Args:
            action: The action as decoded from the wire.
            parsed: The caller already validated it (a vector slice checks a whole column at once).

        Returns:
            ``(obs, reward, terminated, truncated, info)``, the obs as it crosses the wire.

        Raises:
            ResetNeededError: The session was never reset, or its episode ended: a step
                there would pay rewards outside any episode (Gymnasium's vector envs refuse
                it too, with autoreset disabled).
            InvalidActionError: The action does not fit the action space.
            SessionNotFoundError: The session was closed while this call waited.
        """
        with self.lock:
            self._check_open()
            if self.episode_id is None:
                raise ResetNeededError(f"session {self.id!r} has not been reset; call reset first")
            if self.done:
                raise ResetNeededError(
                    f"the episode of session {self.id!r} ended at step {self.step_count} "
                    "(terminated or truncated); call reset to start a new one")
            value = action if parsed else self.env.parse_action(action)
            obs, reward, terminated, truncated, info = _returned("step", self.env.step(value))
            obs = self.env.observation_to_wire(obs)
            reward = _reward(reward)
            terminated, truncated = bool(terminated), bool(truncated)
            first = self.step_count == 0
            self.record_step(action, obs, reward, terminated or truncated)
            if first or type(info) is not dict:  # after the bookkeeping: the env did step
                self.env.check_output("step", obs, info, ended=terminated or truncated)
        return obs, reward, terminated, truncated, info

    def _check_open(self) -> None:
        if self.closed:
            raise SessionNotFoundError(f"session {self.id!r} was closed while this call waited for it")

    def begin_episode(self, obs: Any) -> None:
        """Record a reset."""
        with self.book:
            # At the end of the call: a 5 s step under a 3 s idle timeout must not leave a
            # session that expires before its client's next step.
            self.last_used = time.monotonic()
            self.episode_id = uuid.uuid4().hex[:12]
            self.episode += 1
            self.step_count = 0
            self.episode_return = 0.0
            self.done = False
            self.history.clear()
            self.last_obs = obs

    def record_step(self, action: Any, obs: Any, reward: float, done: bool) -> None:
        """Record a step (its action, reward and whether it ended the episode)."""
        with self.book:
            self.last_used = time.monotonic()  # as in begin_episode
            self.step_count += 1
            self.episode_return += reward
            self.done = done
            self.last_obs = obs
            self.history.append((self.step_count, _preview(action), reward))
            if done:
                self.returns.append(self.episode_return)


#: What Gymnasium's API has ``reset`` and ``step`` return.
_RETURNS = {"reset": ("obs", "info"), "step": ("obs", "reward", "terminated", "truncated", "info")}


def _returned(call: str, result: Any) -> tuple[Any, ...]:
    """``result`` of the env's ``call``, refused by name unless it is the tuple Gymnasium's API
    returns (an old-API ``step`` returns 4 values; a ``reset`` may return the observation alone)."""
    names = _RETURNS[call]
    if isinstance(result, tuple) and len(result) == len(names):
        return result
    got = f"a {len(result)}-tuple" if isinstance(result, tuple) else f"a {type(result).__name__}"
    old = " (gym < 0.26's done is now terminated and truncated)" if call == "step" else ""
    raise TypeError(f"the env's {call}() returned {got}; it must return the tuple "
                    f"({', '.join(names)}), as Gymnasium's Env.{call} does{old}")


def _reward(reward: Any) -> float | int:
    """The step's reward as a float, or as the int it is (FrozenLake's and Taxi's, which a
    local env hands over as ints). Text is refused, though ``float`` would read it: locally
    a trainer given ``"1.0"`` fails (SB3 adds it to a float array), so it is the env's bug."""
    if type(reward) is int and -(1 << 63) <= reward < (1 << 63):  # (larger: msgpack has no int for it)
        return reward
    if not isinstance(reward, (str, bytes)):
        try:
            return float(reward)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"the env's step() returned a reward of type {type(reward).__name__} "
                    f"({reprlib.repr(reward)}); a reward is a number (int, float or a numpy scalar)")


#: Characters of a text action (or of each text field of a mapping) that the history keeps:
#: ``/web`` shows 300 of them; a Coding action may be 1 MiB, and 50 of them would stay resident.
PREVIEW = 1000


def _preview(action: Any) -> Any:
    """The action as the history keeps it: long text cut to :data:`PREVIEW` characters."""
    if isinstance(action, str):
        return action[:PREVIEW]
    if isinstance(action, dict) and any(isinstance(v, str) and len(v) > PREVIEW for v in action.values()):
        return {k: v[:PREVIEW] if isinstance(v, str) else v for k, v in action.items()}
    return action


class SessionManager:
    """Creates, finds, expires and closes sessions, thread-safely.

    Args:
        factory: Builds a fresh env.
        max_sessions: Most sessions alive at once; more raise :class:`SessionLimitError`.
        idle_timeout: Seconds after its last use a session is closed (``None``: never).
    """

    def __init__(
        self,
        factory: Callable[[], Environment],
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self._factory = factory
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._sessions: dict[str, Session] = {}
        self._spare: list[Environment] = []
        self._lock = threading.Lock()
        self._closers: set[threading.Thread] = set()  # closing envs of sessions closed mid-call
        self._stop = threading.Event()
        if idle_timeout is not None:
            threading.Thread(target=self._expire_loop, name="session-expiry", daemon=True).start()

    def keep_spare(self, env: Environment) -> None:
        """Hand over an env built ahead of time (for ``/spec``) for the next session to use."""
        self._spare.append(env)

    def create(self) -> Session:
        """Start a session with a fresh env.

        Raises:
            SessionLimitError: ``max_sessions`` are already alive.
        """
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                raise SessionLimitError(
                    f"this server already hosts {self.max_sessions} sessions (its limit); close "
                    "sessions you no longer use (DELETE /sessions/{id}) or start it with a higher "
                    "--max-sessions"
                )
            env = self._spare.pop() if self._spare else None
            sid = uuid.uuid4().hex
            # Reserve the slot before building the env, which may be slow, outside the lock.
            self._sessions[sid] = None  # type: ignore[assignment]
        try:
            session = Session(sid, env if env is not None else self._factory())
        except BaseException:
            with self._lock:
                del self._sessions[sid]
            raise
        with self._lock:
            self._sessions[sid] = session
        return session

    def get(self, sid: str) -> Session:
        """Find a live session and mark it used (its calls mark it again when they end).

        Raises:
            SessionNotFoundError: Unknown, closed or expired.
        """
        session = self._sessions.get(sid) if isinstance(sid, str) else None
        if session is None:
            expired = (f", or expired after {self.idle_timeout:g} s without a call (the server's "
                       "--idle-timeout; 0 keeps sessions until they are closed)"
                       if self.idle_timeout is not None else "")
            # Cut: a caller's id may be megabytes, which a reply must not echo back (the
            # server's own ids, 32 characters, are quoted whole).
            raise SessionNotFoundError(
                f"no session {short_repr(sid)}: it was never created, or was closed{expired}; reset() "
                "starts a new one (over HTTP: a reset without a session id)"
            )
        session.last_used = time.monotonic()
        return session

    def close(self, sid: str, wait: bool = False) -> None:
        """Close a session: it leaves the table at once; its env closes once no call uses it.

        Args:
            sid: The session.
            wait: Return only once the env is closed, after a call in flight ends (at
                shutdown). Otherwise a call in flight (a Coding step may take a minute)
                closes it from a thread of its own, and the caller does not wait.

        Raises:
            SessionNotFoundError: Unknown, closed or expired.
        """
        with self._lock:
            session = self._sessions.pop(sid, None) if isinstance(sid, str) else None
        if session is None:
            raise SessionNotFoundError(f"no session {short_repr(sid)} to close")
        session.closed = True  # calls waiting for the one in flight are refused
        if session.lock.acquire(blocking=wait):
            try:
                session.env.close()
            finally:
                session.lock.release()
            return
        closer = threading.Thread(target=self._close_later, args=(session,), daemon=True,
                                  name=f"close-{session.id[:8]}")
        with self._lock:
            self._closers.add(closer)
        closer.start()

    def _close_later(self, session: Session) -> None:
        try:
            with session.lock:
                session.env.close()
        finally:
            with self._lock:
                self._closers.discard(threading.current_thread())

    def sessions(self) -> list[Session]:
        """The live sessions (a snapshot)."""
        with self._lock:
            return [s for s in self._sessions.values() if s is not None]

    def __len__(self) -> int:
        return len(self._sessions)

    def expire_idle(self) -> int:
        """Close sessions idle longer than ``idle_timeout``; returns how many."""
        if self.idle_timeout is None:
            return 0
        cutoff = time.monotonic() - self.idle_timeout
        # The lock first: a call that ends between the two reads has refreshed last_used.
        stale = [s.id for s in self.sessions() if not s.lock.locked() and s.last_used < cutoff]
        for sid in stale:
            try:
                self.close(sid)
            except SessionNotFoundError:
                pass  # closed by its client meanwhile
        return len(stale)

    def _expire_loop(self) -> None:
        period = max(0.05, min(5.0, (self.idle_timeout or 5.0) / 4))
        while not self._stop.wait(period):
            self.expire_idle()

    def close_all(self) -> None:
        """Close every session and stop the expiry thread; returns once every env is closed."""
        self._stop.set()
        for session in self.sessions():
            try:
                self.close(session.id, wait=True)
            except SessionNotFoundError:
                pass
        with self._lock:
            closers = list(self._closers)
        for closer in closers:
            closer.join()
        for env in self._spare:
            env.close()
        self._spare.clear()
