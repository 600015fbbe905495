"""``openenv-gym bench ENV``: env-steps per second and step latency percentiles on a provider.

With ``--num-envs 1`` it times ``gym.make(...).step``; with more it times the vector env's
batched ``step`` (``gym.make_vec``). Actions are sampled from the action space (seeded) unless
``--action`` gives one as JSON (samples are drawn before timing starts). The figures are for this machine and this moment: compare
runs made side by side (``benchmarks/`` does that against reference systems).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from openenv_gym._text import cut
from openenv_gym.cli._args import (
    add_env_kwargs,
    exit_codes,
    json_value,
    non_negative_int,
    positive_int,
)
from openenv_gym.cli._ui import (
    ENV_ARGUMENT_ERRORS,
    OK,
    USAGE,
    console,
    env_arguments_refused,
    env_raised,
    err_console,
    error,
)
from openenv_gym.errors import EnvServerError, InvalidActionError, InvalidRequestError, OpenEnvError
from openenv_gym.providers import PROVIDERS

__all__ = ["register", "make_env", "run_bench", "percentiles", "ActionRefusedError"]


class ActionRefusedError(InvalidActionError):
    """The env refused the action given to :func:`run_bench` (``--action``): the env's own
    :class:`~openenv_gym.errors.InvalidActionError`, with where it happened.

    Attributes:
        space: The action space of one env (what the action must fit).
        step: The ``step`` call that refused it, counting from 0 (warmup included).
    """

    def __init__(self, refused: InvalidActionError, space: Any, step: int) -> None:
        super().__init__(str(refused))
        self.space = space
        self.step = step


def _short(value: Any, limit: int = 80) -> str:
    """``value`` as JSON, cut to ``limit`` characters (an action may hold a whole program)."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return cut(text, limit)


def _batched(action: Any, single: Any, num_envs: int) -> Any:
    """One env's ``action`` repeated for ``num_envs`` envs, in the batched form a vector env's
    ``step`` takes, changing nothing the single env would refuse.

    Raises:
        InvalidActionError: ``action`` cannot be batched for ``single`` (not a mapping for a
            Dict space, an array of ragged rows, no number for a numeric space).
    """
    from gymnasium import spaces

    if isinstance(single, spaces.Dict):
        if not isinstance(action, dict):
            raise InvalidActionError(f"action must be a mapping with fields "
                                     f"({', '.join(single.spaces)}), got {type(action).__name__}")
        # By the action's own fields: the vector env refuses one the space lacks, and leaves
        # one the action omits to the env, as a single env does (Coding's timeout has a default).
        return {k: [v] * num_envs for k, v in action.items()}
    numeric = isinstance(single, (spaces.Box, spaces.Discrete, spaces.MultiDiscrete,
                                  spaces.MultiBinary))
    try:
        batch = np.asarray([action] * num_envs, dtype=None if numeric else single.dtype)
    except (TypeError, ValueError, OverflowError):  # ragged rows, a string for a number...
        raise InvalidActionError(f"action {_short(action)} is not in the action space "
                                 f"{single}") from None
    if not numeric:
        return batch
    if batch.dtype.kind not in "biuf":
        raise InvalidActionError(f"action {_short(action)} is not in the action space {single}")
    with np.errstate(invalid="ignore", over="ignore"):
        cast = batch.astype(single.dtype)
    # Numbers for a float Box are rounded to its dtype, as a policy's would be. Into integers
    # only integers that fit: a float (1.5, or 1.0, which the single env refuses too) or 256
    # for a uint8 goes as it is, for the vector env to refuse in its own words.
    if single.dtype.kind == "f" or (batch.dtype.kind in "biu" and np.array_equal(cast, batch)):
        return cast
    return batch


def percentiles(latencies: list[float]) -> dict[str, float]:
    """p50/p90/p99 and max of latencies, in milliseconds.

    Example:
        >>> percentiles([0.001] * 10)["p50"]
        1.0
    """
    ms = np.asarray(latencies) * 1e3
    return {"p50": float(np.percentile(ms, 50)), "p90": float(np.percentile(ms, 90)),
            "p99": float(np.percentile(ms, 99)), "max": float(ms.max())}


#: What ``bench`` gives ``gym.make``/``gym.make_vec`` itself, and where the user sets it: in
#: ``--env-kwargs`` it reached them twice ("make() got multiple values for argument 'id'").
_SET_BY_BENCH = {"id": "the ENV argument (the env OpenEnv/Gym-v0 serves is its env_id)",
                 "num_envs": "--num-envs", "provider": "--provider"}


def make_env(env_id: str, num_envs: int, provider: str, env_kwargs: dict[str, Any]) -> Any:
    """The env :func:`run_bench` steps: ``gym.make`` for one env, ``gym.make_vec`` for more.

    Raises:
        InvalidRequestError: ``env_kwargs`` sets what ``bench`` sets itself (``id``,
            ``num_envs``, ``provider``).
    """
    import gymnasium as gym

    import openenv_gym  # noqa: F401  (registers the ids)

    for key, where in _SET_BY_BENCH.items():
        if key in env_kwargs:
            raise InvalidRequestError(f"--env-kwargs cannot set {key!r}: bench sets it from {where}")
    if num_envs > 1:
        return gym.make_vec(env_id, num_envs=num_envs, provider=provider, **env_kwargs)
    return gym.make(env_id, provider=provider, **env_kwargs)


def run_bench(env_id: str, num_envs: int, provider: str, steps: int, warmup: int,
              env_kwargs: dict[str, Any], action: Any = None, seed: int = 0,
              progress: Progress | None = None, env: Any = None) -> dict[str, Any]:
    """Run the benchmark and return its figures.

    Args:
        env_id: Gymnasium id (``"OpenEnv/Echo-v0"``).
        num_envs: Envs stepped together (1: a single ``gym.make`` env).
        provider: Provider name.
        steps: Timed ``step`` calls.
        warmup: Untimed ``step`` calls first (connections, caches).
        env_kwargs: Env keyword arguments.
        action: One env's action to repeat (None: sample from the action space).
        seed: Seed of reset and action sampling.
        progress: Where to show progress.
        env: The env to step, made by :func:`make_env` (None: made here); closed at the end.

    Returns:
        ``steps_per_s`` (env-steps), ``latency_ms`` (per ``step`` call), ``num_envs``,
        ``steps``, ``seconds``, ``episodes``.

    Raises:
        ActionRefusedError: The env refused ``action`` (an :class:`InvalidActionError`).
    """
    vector = num_envs > 1
    if env is None:
        env = make_env(env_id, num_envs, provider, env_kwargs)
    i = 0
    single = None
    try:
        env.reset(seed=seed)
        env.action_space.seed(seed)
        single = env.single_action_space if vector else env.action_space
        fixed = None
        if action is not None:
            fixed = _batched(action, single, num_envs) if vector else action
        # Sampled up front and cycled: sampling (e.g. long random texts) is not the env's time.
        actions = [fixed] if fixed is not None else [env.action_space.sample() for _ in range(64)]
        task = progress.add_task("stepping", total=warmup + steps) if progress else None
        latencies: list[float] = []
        episodes = 0
        started = 0.0
        for i in range(warmup + steps):
            act = actions[i % len(actions)]
            if i == warmup:
                started = time.perf_counter()
            t0 = time.perf_counter()
            _, _, terminated, truncated, _ = env.step(act)
            t1 = time.perf_counter()
            if i >= warmup:
                latencies.append(t1 - t0)
            done = np.logical_or(terminated, truncated)
            episodes += int(np.sum(done))
            if not vector and done:
                env.reset()
            if task is not None:
                progress.advance(task)
        seconds = time.perf_counter() - started
    except InvalidActionError as exc:
        if action is None:  # a sampled action refused: the env's fault, not the caller's
            raise
        raise ActionRefusedError(exc, single, i) from exc
    finally:
        env.close()
    return {"env": env_id, "provider": provider, "num_envs": num_envs, "steps": steps,
            "seconds": seconds, "steps_per_s": steps * num_envs / seconds,
            "latency_ms": percentiles(latencies), "episodes": episodes}


def _bench(args: argparse.Namespace) -> int:
    from openenv_gym.catalog import get_env_info
    from openenv_gym.providers import resolve_provider_name

    try:
        info = get_env_info(args.env)
    except OpenEnvError as exc:
        return error(str(exc), "see `openenv-gym list`", USAGE)
    provider = resolve_provider_name(args.provider, info.untrusted)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())
    try:
        with err_console.status(f"starting {info.name} on provider {provider}…"):
            env = make_env(info.gym_id, args.num_envs, provider, args.env_kwargs)
    except ENV_ARGUMENT_ERRORS as exc:  # as `start` and `serve`: a bad --env-kwargs is a usage error
        return env_arguments_refused(exc)
    except EnvServerError as exc:  # the env's constructor raised (a value of the wrong type)
        return env_raised(exc)
    except (OpenEnvError, TypeError, ValueError) as exc:
        return error(f"the env did not start: {type(exc).__name__}: {exc}",
                     f"`openenv-gym doctor` checks what {info.name} needs")
    try:
        # Off when stderr is no terminal: a transient bar still ends with an empty line there.
        with Progress(*columns, console=err_console, transient=True,
                      disable=not err_console.is_terminal) as progress:
            result = run_bench(info.gym_id, args.num_envs, provider, args.steps, args.warmup,
                               args.env_kwargs, args.action, args.seed, progress, env=env)
    except ActionRefusedError as exc:  # a bad argument, as a bad --env-kwargs is
        return _action_refused(args.action, info.name, exc)
    except (OpenEnvError, TypeError, ValueError) as exc:
        return error(f"benchmark failed: {type(exc).__name__}: {exc}",
                     "check the env and its kwargs with a short script, or `openenv-gym doctor`")
    if args.json:
        console.print_json(json.dumps(result))
        return OK
    lat = result["latency_ms"]
    table = Table(title=f"{info.gym_id} on {provider}, num_envs={args.num_envs}")
    for col in ("env-steps/s", "step p50 ms", "p90 ms", "p99 ms", "max ms", "steps", "episodes"):
        table.add_column(col, justify="right")
    table.add_row(f"{result['steps_per_s']:,.0f}", f"{lat['p50']:.3f}", f"{lat['p90']:.3f}",
                  f"{lat['p99']:.3f}", f"{lat['max']:.3f}", str(result["steps"] * args.num_envs),
                  str(result["episodes"]))
    console.print(table)
    return OK


def _action_refused(action: Any, env_name: str, exc: ActionRefusedError) -> int:
    """Report that ``env_name`` refused ``--action``; returns :data:`USAGE`."""
    from gymnasium import spaces

    where = ""
    if exc.step:  # taken before: valid in some states only (a move that becomes illegal)
        where = (f" at step {exc.step + 1}, after taking it {exc.step} times (an action the env "
                 "takes only in some states cannot be repeated)")
    if isinstance(exc.space, spaces.Dict):
        expected = f"a JSON object of its action's fields ({', '.join(exc.space.spaces)})"
    elif exc.space is not None:
        expected = f"a JSON value in its action space {exc.space}"
    else:
        expected = "one action of the env as JSON"
    return error(f"--action {_short(action)} was refused by {env_name}{where}: {exc}",
                 f"give --action {expected}, or leave --action out to sample actions", USAGE)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench``."""
    p = sub.add_parser("bench", help="measure env-steps/s and step latency percentiles",
                       description="Step ENV on a provider and print env-steps/s and the "
                                   "p50/p90/p99 latency of step().",
                       epilog=exit_codes("measured", "the run failed"))
    p.add_argument("env", help="name or id, e.g. echo or OpenEnv/Echo-v0")
    p.add_argument("--num-envs", type=positive_int, default=1,
                   help="envs stepped together (default 1)")
    p.add_argument("--provider", default="process", choices=["auto", *PROVIDERS],
                   help="where workers run (default process)")
    p.add_argument("--steps", type=positive_int, default=2000, help="timed steps (default 2000)")
    p.add_argument("--warmup", type=non_negative_int, default=100,
                   help="untimed steps first (default 100)")
    add_env_kwargs(p)
    p.add_argument("--action", type=json_value, metavar="JSON",
                   help="one env's action as JSON (default: sampled)")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="seed of reset and action sampling (default 0)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=_bench)
