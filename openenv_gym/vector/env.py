"""``RemoteVectorEnv``: a :class:`gymnasium.vector.VectorEnv` over a pool of remote workers.

``gym.make_vec("OpenEnv/Gym-v0", num_envs=8, env_id="CartPole-v1")`` builds one through
``vector_entry_point``. Each worker hosts ``envs_per_worker`` sub-envs; a vector step sends
one message per worker and gathers the replies into preallocated batch arrays. Autoreset
follows Gymnasium 1.x (``NEXT_STEP`` by default, ``SAME_STEP``, ``DISABLED``), and a worker
that dies or hangs is replaced while the other envs carry on.

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

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from openenv_gym.catalog import get_env_info
from openenv_gym.errors import (
    InvalidRequestError,
    OpenEnvError,
    WorkerCrashedError,
    WorkerError,
    WorkerTimeoutError,
    error_from_wire,
)
from openenv_gym.providers import get_provider
from openenv_gym.spaces import space_from_dict
from openenv_gym.vector.batch import BatchBuffer, split_actions
from openenv_gym.vector.pool import WorkerFailure, WorkerPool

__all__ = ["RemoteVectorEnv", "parse_autoreset_mode"]

# What each sub-request of a step stands for, so the gather knows how to read the replies.
_STEP, _STEP_THEN_RESET, _RESET, _LOST = range(4)


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
        envs_per_worker: Sub-envs each worker hosts (stepped from one message).
        autoreset_mode: ``NEXT_STEP`` (default), ``SAME_STEP`` (``final_obs``/``final_info``
            in the infos) or ``DISABLED`` (reset ended envs with ``options={"reset_mask": m}``).
        on_worker_error: ``"restart"`` (default): a failed worker is replaced and its envs
            report ``truncated=True`` with ``info["worker_restarted"]``; ``"raise"``: raise
            the worker's typed error (:class:`~openenv_gym.errors.WorkerCrashedError`, ...).
        step_timeout: Seconds a worker may take for one vector operation before it counts
            as failed.
        provider_options: Keyword arguments for the provider.
        max_episode_steps: Truncate episodes after this many steps (as ``gym.make`` does).
        render_mode: Render mode of every sub-env (``"rgb_array"``, ``"ansi"``).
        copy: Return copies of the observation buffer (as ``SyncVectorEnv``'s ``copy``).
        **env_kwargs: Keyword arguments for each sub-env's constructor in the workers.
    """

    #: Replaced per instance by the worker's metadata plus the chosen autoreset mode.
    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, env: str = "echo", *, provider: str = "auto",
                 envs_per_worker: int = 1,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 on_worker_error: str = "restart", step_timeout: float = 60.0,
                 provider_options: dict[str, Any] | None = None,
                 max_episode_steps: int | None = None, render_mode: str | None = None,
                 copy: bool = True, **env_kwargs: Any) -> None:
        _check_positive_int("num_envs", num_envs)
        _check_positive_int("envs_per_worker", envs_per_worker)
        if max_episode_steps is not None:
            _check_positive_int("max_episode_steps", max_episode_steps)
        if on_worker_error not in ("restart", "raise"):
            raise InvalidRequestError(f"on_worker_error={on_worker_error!r}; use 'restart' or 'raise'")
        if not isinstance(step_timeout, (int, float)) or step_timeout <= 0:
            raise InvalidRequestError(f"step_timeout must be a positive number of seconds, got {step_timeout!r}")
        self.autoreset_mode = parse_autoreset_mode(autoreset_mode)
        self.info = get_env_info(env)
        self.num_envs = num_envs
        self.on_worker_error = on_worker_error
        self.step_timeout = float(step_timeout)
        self.max_episode_steps = max_episode_steps
        self.render_mode = render_mode
        self.copy = copy
        self._pool: WorkerPool | None = None
        provider_obj = get_provider(provider, untrusted=self.info.untrusted, **(provider_options or {}))
        self.provider_name = provider_obj.name
        kwargs = dict(env_kwargs, **({"render_mode": render_mode} if render_mode else {}))
        self._pool = WorkerPool(provider_obj, self.info.name, num_envs, envs_per_worker, kwargs,
                                timeout=self.step_timeout)
        try:
            spec = self._pool.request(0, {"op": "spec"})["spec"]
        except BaseException:
            self.close()
            raise
        self.remote_spec: dict[str, Any] = spec
        self.single_observation_space = space_from_dict(spec["observation_space"])
        self.single_action_space = space_from_dict(spec["action_space"])
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        metadata = dict(spec.get("metadata", {}))
        metadata["render_modes"] = [m for m in metadata.get("render_modes", []) if m != "human"]
        self.metadata = {**metadata, "autoreset_mode": self.autoreset_mode, "openenv_env": spec["env"]}

        self._obs = BatchBuffer(self.single_observation_space, num_envs)
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=np.bool_)
        self._truncations = np.zeros(num_envs, dtype=np.bool_)
        self._autoreset_envs = np.zeros(num_envs, dtype=np.bool_)
        self._elapsed = np.zeros(num_envs, dtype=np.int64)
        self._was_reset = False
        #: Envs whose session was lost outside a step (their next step reports the restart).
        self._lost: dict[int, str] = {}
        self._plan: dict[int, list[tuple[int, int]]] | None = None
        #: Per-env results of the last step, for :class:`openenv_gym.sb3.RemoteVecEnv`.
        self.last_env_infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self.last_final: dict[int, tuple[Any, dict[str, Any]]] = {}

    # -- properties -------------------------------------------------------------------
    @property
    def workers(self) -> list[Any]:
        """The pool's workers (:class:`~openenv_gym.providers.base.Worker`), in env order."""
        return self._pool.workers if self._pool else []

    @property
    def pool(self) -> WorkerPool:
        """The worker pool (groups, sessions, fan-out)."""
        if self._pool is None:
            raise gym.error.ClosedEnvironmentError("this RemoteVectorEnv is closed")
        return self._pool

    # -- reset ------------------------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-env (or those in ``options["reset_mask"]``), as ``SyncVectorEnv``.

        Args:
            seed: None, an int (env ``i`` gets ``seed + i``) or one seed per env.
            options: Passed to each sub-env's reset; ``reset_mask`` (bool array of shape
                ``(num_envs,)``) limits the reset to those envs.

        Returns:
            The batched observations and infos.
        """
        self._discard_pending()
        self.pool  # raises once closed
        seeds = self._seeds(seed)
        options = dict(options) if options is not None else None
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            mask = _check_mask(options.pop("reset_mask"), self.num_envs)
        indices = [i for i in range(self.num_envs) if mask[i]]
        replies = self._reset_envs(indices, seeds, options)
        infos: dict[str, Any] = {}
        for i in indices:
            reply = replies[i]
            self._obs.write(i, reply["obs"])
            infos = self._add_info(infos, reply["info"], i)
            self._lost.pop(i, None)
        self._terminations[mask] = False
        self._truncations[mask] = False
        self._autoreset_envs[mask] = False
        self._elapsed[mask] = 0
        self._was_reset = True
        return self._obs.batch(self.copy), infos

    def _seeds(self, seed: Any) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"If seeds are passed as a list the length must match "
                             f"num_envs={self.num_envs} but got length={len(seeds)}.")
        return [None if s is None else int(s) for s in seeds]

    def _reset_envs(self, indices: list[int], seeds: list[int | None],
                    options: dict[str, Any] | None) -> dict[int, dict[str, Any]]:
        """Reset ``indices`` (creating sessions where needed); a failed worker is replaced once."""
        pool = self.pool
        out: dict[int, dict[str, Any]] = {}
        todo = indices
        for attempt in range(2):
            calls: dict[int, list[dict[str, Any]]] = {}
            order: dict[int, list[int]] = {}
            for i in todo:
                w = pool.worker_of[i]
                call: dict[str, Any] = {"op": "reset", "seed": seeds[i], "options": options}
                if pool.sids[i] is not None:
                    call["sid"] = pool.sids[i]
                calls.setdefault(w, []).append(call)
                order.setdefault(w, []).append(i)
            retry: list[int] = []
            errors: list[OpenEnvError] = []
            for w, reply in pool.exchange(calls).items():
                if isinstance(reply, WorkerFailure):
                    if attempt == 1:
                        raise self._worker_error(reply)
                    self._handle_failure(reply, reset_targets=set(order[w]))
                    retry.extend(order[w])
                    continue
                for i, sub in zip(order[w], reply):
                    if not sub["ok"]:
                        errors.append(_env_error(i, sub))
                        continue
                    pool.sids[i] = sub["sid"]
                    out[i] = sub
            if errors:
                raise errors[0]
            if not retry:
                break
            todo = retry
        return out

    # -- step -------------------------------------------------------------------------
    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every sub-env with its action (``step_async`` then ``step_wait``).

        Returns:
            Batched observations, rewards, terminations, truncations and infos.
        """
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Any) -> None:
        """Send each worker the actions of its envs (one message per worker), without waiting.

        Raises:
            gym.error.AlreadyPendingCallError: A step is already in flight.
            gym.error.ResetNeeded: ``reset()`` was never called.
            InvalidRequestError: With ``DISABLED`` autoreset, an ended env was stepped.
        """
        pool = self.pool
        if self._plan is not None:
            raise gym.error.AlreadyPendingCallError("step_async called twice without step_wait",
                                                    "step")
        if not self._was_reset:
            raise gym.error.ResetNeeded("call reset() before step()")
        acts = split_actions(self.single_action_space, self.action_space, actions)
        if len(acts) != self.num_envs:
            raise InvalidRequestError(f"got {len(acts)} actions for {self.num_envs} envs")
        mode = self.autoreset_mode
        limit = self.max_episode_steps
        calls: dict[int, list[dict[str, Any]]] = {w: [] for w in range(len(pool.groups))}
        plan: dict[int, list[tuple[int, int]]] = {w: [] for w in range(len(pool.groups))}
        for i, action in enumerate(acts):
            w = pool.worker_of[i]
            sid = pool.sids[i]
            if i in self._lost:
                plan[w].append((i, _LOST))
            elif self._autoreset_envs[i]:
                if mode is AutoresetMode.DISABLED:
                    raise InvalidRequestError(
                        f"env {i} ended its episode; with autoreset_mode=DISABLED reset it first: "
                        "reset(options={'reset_mask': mask})")
                calls[w].append({"op": "reset", "sid": sid} if sid else {"op": "reset"})
                plan[w].append((i, _RESET))
            elif mode is AutoresetMode.SAME_STEP and limit is not None and self._elapsed[i] + 1 >= limit:
                # The time limit ends this episode: reset right after the step, same message.
                calls[w].append({"op": "step", "sid": sid, "action": action})
                calls[w].append({"op": "reset", "sid": sid})
                plan[w].append((i, _STEP_THEN_RESET))
            else:
                call = {"op": "step", "sid": sid, "action": action}
                if mode is AutoresetMode.SAME_STEP:
                    call["autoreset"] = True
                calls[w].append(call)
                plan[w].append((i, _STEP))
        pool.send({w: c for w, c in calls.items() if c})
        self._plan = plan

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Gather the replies of :meth:`step_async` into the batch buffers.

        Returns:
            Batched observations, rewards, terminations, truncations and infos.

        Raises:
            gym.error.NoAsyncCallError: No step is in flight.
            WorkerError: A worker failed and ``on_worker_error="raise"``.
            InvalidActionError: An action did not fit (that env did not step).
        """
        self._gather()
        return self._batched()

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
        infos: dict[str, Any] = {}
        for i in range(self.num_envs):
            final = self.last_final.get(i)
            if final is not None:
                infos = self._add_info(infos, {"final_obs": final[0], "final_info": final[1]}, i)
            infos = self._add_info(infos, self.last_env_infos[i], i)
        return (self._obs.batch(self.copy), self._rewards.copy(), self._terminations.copy(),
                self._truncations.copy(), infos)

    def _gather(self) -> None:
        """Read the step replies; per-env infos land in :attr:`last_env_infos`/:attr:`last_final`."""
        pool = self.pool
        plan = self._plan
        if plan is None:
            raise gym.error.NoAsyncCallError("step_wait called without step_async", "step")
        self._plan = None
        replies = pool.receive([w for w, p in plan.items() if p and any(k != _LOST for _, k in p)])
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        limit = self.max_episode_steps
        env_infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        final: dict[int, tuple[Any, dict[str, Any]]] = {}
        restarted: dict[int, str] = {}
        errors: list[OpenEnvError] = []
        failures: list[WorkerFailure] = []
        for w, items in plan.items():
            reply = replies.get(w)
            if isinstance(reply, WorkerFailure):
                failures.append(reply)
                continue
            pos = 0
            for i, kind in items:
                if kind == _LOST:
                    restarted[i] = self._lost.pop(i)
                    continue
                sub = reply[pos]  # type: ignore[index]
                pos += 1
                if not sub["ok"]:
                    errors.append(_env_error(i, sub))
                    pos += kind == _STEP_THEN_RESET
                    continue
                if kind == _RESET:
                    pool.sids[i] = sub["sid"]
                    self._obs.write(i, sub["obs"])
                    self._rewards[i] = 0.0
                    self._terminations[i] = self._truncations[i] = False
                    self._elapsed[i] = 0
                    env_infos[i] = sub["info"]
                    continue
                self._elapsed[i] += 1
                terminated, truncated = sub["terminated"], sub["truncated"]
                if limit is not None and self._elapsed[i] >= limit:
                    truncated = True
                self._rewards[i] = sub["reward"]
                self._terminations[i], self._truncations[i] = terminated, truncated
                if same_step and (terminated or truncated):
                    if kind == _STEP_THEN_RESET:
                        after = reply[pos]  # type: ignore[index]
                        pos += 1
                        if not after["ok"]:
                            errors.append(_env_error(i, after))
                            continue
                        reset_obs, reset_info = after["obs"], after["info"]
                    else:
                        reset_obs, reset_info = sub["reset_obs"], sub["reset_info"]
                    final[i] = (self._obs.write(i, sub["obs"]), sub["info"])
                    self._obs.write(i, reset_obs)
                    self._elapsed[i] = 0
                    env_infos[i] = reset_info
                else:
                    self._obs.write(i, sub["obs"])
                    env_infos[i] = sub["info"]
                    pos += kind == _STEP_THEN_RESET  # keep in frame (a time-limited step always ends)
        if failures and self.on_worker_error == "raise":
            raise self._worker_error(failures[0])
        for failure in failures:
            for i in self._handle_failure(failure):
                restarted[i] = self._lost.pop(i)
        for i, text in restarted.items():
            flag = {"worker_restarted": True, "worker_error": text}
            self._rewards[i] = 0.0
            self._terminations[i], self._truncations[i] = False, True
            self._elapsed[i] = 0
            if same_step:
                final[i] = (self._obs.get(i), dict(flag))
            env_infos[i] = dict(flag)
        if same_step and restarted:
            # Their workers are fresh: start the next episodes now, as SAME_STEP promises.
            replies_r = self._reset_envs(sorted(restarted), [None] * self.num_envs, None)
            for i, sub in replies_r.items():
                self._obs.write(i, sub["obs"])
                env_infos[i] = {**sub["info"], **env_infos[i]}
        if not same_step:
            self._autoreset_envs = self._terminations | self._truncations
        self.last_env_infos = env_infos
        self.last_final = final
        if errors:
            raise errors[0]

    # -- failures ---------------------------------------------------------------------
    def _worker_error(self, failure: WorkerFailure) -> WorkerError:
        text = self.pool.describe(failure.worker, failure.error)
        cls = type(failure.error) if isinstance(failure.error, WorkerError) else WorkerError
        if cls is not WorkerTimeoutError and not self._alive(failure.worker):
            # A dead worker may surface as a refused send or a reset read: name it one way.
            cls = WorkerCrashedError
        return cls(f"{text}\n(on_worker_error='raise'; pass on_worker_error='restart' to replace "
                   "failed workers and continue with truncated episodes)")

    def _alive(self, worker: int) -> bool:
        try:
            return bool(self.pool.workers[worker].alive())
        except Exception:  # an engine that cannot answer counts as a dead worker
            return False

    def _handle_failure(self, failure: WorkerFailure, reset_targets: set[int] = frozenset()) -> list[int]:
        """Replace a failed worker (or raise); its envs not being reset are marked lost."""
        if self.on_worker_error == "raise":
            raise self._worker_error(failure)
        pool = self.pool
        text = pool.describe(failure.worker, failure.error)
        try:
            pool.restart(failure.worker)
        except Exception as exc:
            raise WorkerError(f"{text}\nand restarting it failed too: {exc}") from exc
        lost = [i for i in pool.groups[failure.worker] if i not in reset_targets]
        for i in lost:
            self._lost[i] = text
        return lost

    # -- call / attributes / render ---------------------------------------------------
    def _ensure_sessions(self) -> None:
        missing = [i for i in range(self.num_envs) if self.pool.sids[i] is None]
        if missing:
            # Sub-envs exist only as sessions; an unseeded reset creates them.
            for i, sub in self._reset_envs(missing, [None] * self.num_envs, None).items():
                self._obs.write(i, sub["obs"])

    def _per_env(self, make: Any, indices: Sequence[int] | None = None) -> tuple[Any, ...]:
        """Send ``make(i, sid)`` to each env (all, or ``indices``), one batch per worker.

        Returns:
            The sub-replies, in the order of ``indices`` (env order by default).
        """
        self._discard_pending()
        self._ensure_sessions()
        pool = self.pool
        targets = list(range(self.num_envs)) if indices is None else [int(i) for i in indices]
        order: dict[int, list[int]] = {}
        for i in targets:
            order.setdefault(pool.worker_of[i], []).append(i)
        calls = {w: [make(i, pool.sids[i]) for i in envs] for w, envs in order.items()}
        values: dict[int, Any] = {}
        for w, reply in pool.exchange(calls).items():
            if isinstance(reply, WorkerFailure):
                error = self._worker_error(reply)
                self._handle_failure(reply)
                raise error
            for i, sub in zip(order[w], reply):
                if not sub["ok"]:
                    raise _env_error(i, sub)
                values[i] = sub
        return tuple(values[i] for i in targets)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method (or read an attribute) of every sub-env in its worker.

        Args and results must cross the wire (numbers, text, lists, dicts, arrays).

        Returns:
            One result per sub-env.
        """
        subs = self._per_env(lambda i, sid: {"op": "call", "sid": sid, "name": name,
                                             "args": list(args), "kwargs": kwargs})
        return tuple(s["value"] for s in subs)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Read an attribute of every sub-env.

        Returns:
            One value per sub-env.
        """
        return tuple(s["value"] for s in self._per_env(
            lambda i, sid: {"op": "get_attr", "sid": sid, "name": name}))

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set an attribute of every sub-env: one value for all, or a list/tuple of one per env."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError("Values must be a list or tuple with length equal to the number of "
                             f"environments. Got `{len(values)}` values for {self.num_envs} environments.")
        self._per_env(lambda i, sid: {"op": "set_attr", "sid": sid, "name": name, "value": values[i]})

    def render(self) -> tuple[Any, ...] | None:
        """Every sub-env's frame (``rgb_array``) or text (``ansi``); None without a render mode."""
        if self.render_mode is None:
            return None
        return tuple(s["frame"] for s in self._per_env(lambda i, sid: {"op": "render", "sid": sid}))

    # -- lifecycle --------------------------------------------------------------------
    def _discard_pending(self) -> None:
        if self._plan is not None and self._pool is not None:
            plan, self._plan = self._plan, None
            self._pool.receive([w for w, p in plan.items() if p and any(k != _LOST for _, k in p)])

    def close_extras(self, **kwargs: Any) -> None:
        """Stop every worker of the pool."""
        pool, self._pool = self._pool, None
        self._plan = None
        if pool is not None:
            pool.close()

    def __repr__(self) -> str:
        return (f"RemoteVectorEnv({self.info.gym_id}, num_envs={self.num_envs}, "
                f"provider={getattr(self, 'provider_name', '?')!r})")


def _check_positive_int(name: str, value: Any) -> None:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise InvalidRequestError(f"{name} must be a positive integer, got {value!r}")


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
