"""``RemoteVecEnv``: a Stable-Baselines3 ``VecEnv`` over a pool of remote workers.

It is a thin SB3 face on :class:`~openenv_gym.vector.RemoteVectorEnv` run in ``SAME_STEP``
autoreset mode: SB3's ``terminal_observation`` and ``TimeLimit.truncated`` come from the
per-env results of each step; the pool, fan-out and worker restarts are the vector env's.

Example:
    >>> from stable_baselines3 import PPO
    >>> from openenv_gym.sb3 import RemoteVecEnv
    >>> venv = RemoteVecEnv("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="process")
    >>> model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1).learn(128)
    >>> venv.close()
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from openenv_gym.client.env import served_method
from openenv_gym.errors import InvalidRequestError
from openenv_gym.protocol.slices import is_flat
from openenv_gym.vector.env import RemoteVectorEnv, make_vec_spec

__all__ = ["RemoteVecEnv"]


class RemoteVecEnv(VecEnv):
    """``num_envs`` remote envs as one SB3 ``VecEnv`` (PPO, A2C, DQN, SAC, VecMonitor, ...).

    Args:
        env: Catalog name or id (``"OpenEnv/Gym-v0"``, ``"echo"``).
        num_envs: Number of sub-envs.
        provider: ``"auto"``, ``"process"``, ``"docker"`` or ``"ray"``.
        envs_per_worker: Sub-envs each worker hosts (None: one worker per core, see
            :class:`~openenv_gym.vector.env.RemoteVectorEnv`).
        on_worker_error: ``"restart"`` (default) or ``"raise"`` (see ``RemoteVectorEnv``).
        step_timeout: Seconds a worker may take for one step (None: see ``RemoteVectorEnv``).
        provider_options: Keyword arguments for the provider.
        max_episode_steps: Truncate episodes after this many steps.
        render_mode: Render mode of every sub-env.
        **env_kwargs: Keyword arguments for each sub-env's constructor in the workers.

    Example:
        >>> venv = RemoteVecEnv("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="process")
        >>> _ = venv.seed(0)
        >>> venv.reset().shape
        (2, 4)
        >>> obs, rewards, dones, infos = venv.step(np.array([0, 1]))
        >>> rewards.tolist(), dones.tolist()
        ([1.0, 1.0], [False, False])
        >>> venv.close()
    """

    def __init__(self, env: str, num_envs: int = 1, *, provider: str = "auto",
                 envs_per_worker: int | None = None, on_worker_error: str = "restart",
                 step_timeout: float | None = None, provider_options: dict[str, Any] | None = None,
                 max_episode_steps: int | None = None, render_mode: str | None = None,
                 **env_kwargs: Any) -> None:
        vector_kwargs: dict[str, Any] = {
            "provider": provider, "envs_per_worker": envs_per_worker,
            "autoreset_mode": AutoresetMode.SAME_STEP, "on_worker_error": on_worker_error,
            "step_timeout": step_timeout, "provider_options": provider_options,
            "max_episode_steps": max_episode_steps, "render_mode": render_mode}
        self.venv = RemoteVectorEnv(num_envs, env, **vector_kwargs, **env_kwargs)
        self._render_mode = render_mode
        # The spec gym.make_vec gives a vector env made with these arguments (those left at
        # None as not given): each sub-env's (get_attr("spec")) comes from it, what gym.make
        # gives, as DummyVecEnv's envs hold.
        given = {k: v for k, v in vector_kwargs.items() if v is not None}
        self.venv.spec = make_vec_spec(self.venv.info.gym_id, num_envs, {**given, **env_kwargs})
        super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)
        # SB3's VecEnv keeps only ``render_modes``; DummyVecEnv's and SubprocVecEnv's users
        # (VecVideoRecorder's ``render_fps``) read the sub-envs' metadata: keep the served env's.
        served = {k: v for k, v in self.venv.metadata.items() if k != "autoreset_mode"}
        self.metadata = {**served, **self.metadata}
        self._actions: Any = None

    @property
    def workers(self) -> list[Any]:
        """The workers of the underlying pool."""
        return self.venv.workers

    def reset(self) -> VecEnvObs:
        """Reset every env with the seeds/options set by ``seed()``/``set_options()`` (used once)."""
        first = self._options[0]
        options = first if all(_same_options(o, first) for o in self._options) else None
        if options is None:
            # Per-env options differ: reset env by env through masks, as SB3 promises them;
            # each reset's infos are its env's.
            reset_infos: list[dict[str, Any]] = []
            for i, opts in enumerate(self._options):
                mask = np.zeros(self.num_envs, dtype=np.bool_)
                mask[i] = True
                obs, _ = self.venv.reset(seed=self._seeds, options={**opts, "reset_mask": mask})
                reset_infos.append(dict(self.venv.last_env_infos[i]))
            self.reset_infos = reset_infos
        else:
            obs, _ = self.venv.reset(seed=self._seeds, options=options or None)
            # Each env's own reset info, as its autoreset infos are (and DummyVecEnv's): not the
            # batched dict split again, which drops "_"-prefixed keys and turns values into numpy's.
            self.reset_infos = [dict(info) for info in self.venv.last_env_infos]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray | Sequence[Any] | dict[str, Any]) -> None:
        """Send the actions to the workers without waiting.

        Args:
            actions: One action per env, ``actions[i]`` env i's, as SB3's own VecEnvs take them
                (``(num_envs, *action_space.shape)`` for arrays; a list of dicts for a Dict
                space, sent env by env, where a dict of per-env values, Gymnasium's batched
                form, works too; a list of per-env tuples for a Tuple space, where a tuple is
                the batched form).
        """
        rows = _per_env(self.action_space, actions)
        if rows is None:
            self.venv.step_async(actions)
        else:
            self.venv.step_async_per_env(rows)

    def step_wait(self) -> VecEnvStepReturn:
        """Gather the step; ended envs carry ``terminal_observation`` and ``TimeLimit.truncated``."""
        obs, rewards, terminations, truncations, env_infos, finals = self.venv.step_wait_per_env()
        infos: list[dict[str, Any]] = []
        for i in range(self.num_envs):
            final = finals.get(i)
            if final is not None:
                info = dict(final[1])
                info["terminal_observation"] = final[0]
                self.reset_infos[i] = env_infos[i]
            else:
                info = dict(env_infos[i])
            info["TimeLimit.truncated"] = bool(truncations[i] and not terminations[i])
            infos.append(info)
        return obs, rewards.astype(np.float32), terminations | truncations, infos

    def close(self) -> None:
        """Stop every worker."""
        self.venv.close()

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        return list(self._get_indices(indices))

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Read an attribute of the remote envs (``render_mode`` and the spaces are answered
        locally: a space cannot cross the wire, and each env's is this VecEnv's, as
        ``DummyVecEnv``'s ``get_attr("observation_space")`` gives; ``np_random`` is each env's
        Generator as a :class:`~openenv_gym.client.env.ServedGenerator`, drawing in its worker).

        Args:
            attr_name: The attribute.
            indices: The envs (default: all).

        Returns:
            One value per env in ``indices``.
        """
        # sub_env_view() refuses during this thread's pending step, as the served names are
        # refused: so is every name, also those answered here.
        local = {**self.venv.sub_env_view(), "render_mode": self._render_mode}
        targets = self._indices(indices)
        if attr_name in local:
            return [local[attr_name]] * len(targets)
        if attr_name == "np_random":  # a Generator cannot cross the wire: draws run in the workers
            return list(self.venv.get_attr(attr_name, indices=targets))
        # A method is handed out as SB3's own VecEnvs hand out the bound method (a stand-in
        # that calls it in the worker), not called: SB3's has_attr is get_attr, and
        # has_attr("reset") must not reset the served envs.
        subs = self.venv._attr_replies(attr_name, targets)
        return [self._served_method(attr_name, i) if sub.get("callable") else sub["value"]
                for i, sub in zip(targets, subs)]

    def _served_method(self, name: str, index: int) -> Any:
        return served_method(name, f"the served env {index}'s",
                             lambda args, kwargs: self.venv.call(name, *args, indices=[index], **kwargs)[0])

    def has_attr(self, attr_name: str) -> bool:
        """Whether every remote env has ``attr_name`` (as SB3's ``VecEnv.has_attr``; an
        attribute whose value cannot cross the wire, such as ``np_random``, is there too).

        A name the workers refuse to serve (a private one, ``_elapsed_steps``, or one that is
        not an identifier) is False, though a served env may hold it: this VecEnv can never
        read it (``get_attr`` raises ``InvalidRequestError``), and SB3 promises a bool.

        Args:
            attr_name: The attribute.

        Returns:
            Whether the envs have it; nothing is called.
        """
        try:
            self.get_attr(attr_name)
        except AttributeError:
            return False
        except InvalidRequestError:  # the server's rule for names, not repeated here
            return False
        except TypeError:  # there, but its value cannot cross the wire
            return True
        return True

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the remote envs in ``indices``.

        Args:
            attr_name: The attribute.
            value: Its new value, the same for every env.
            indices: The envs (default: all).
        """
        targets = self._indices(indices)
        self.venv.set_attr(attr_name, [value] * len(targets), indices=targets)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call a method of the remote envs in ``indices``; arguments and results cross the wire.

        Args:
            method_name: The method of the served envs.
            *method_args: Its positional arguments.
            indices: The envs (default: all).
            **method_kwargs: Its keyword arguments.

        Returns:
            One result per env in ``indices``.
        """
        return list(self.venv.call(method_name, *method_args, indices=self._indices(indices), **method_kwargs))

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """Always False: remote envs are not wrapped on this side (wrap the VecEnv instead).

        Args:
            wrapper_class: The wrapper SB3 asks about.
            indices: The envs (default: all).

        Returns:
            ``False`` for each env in ``indices``.
        """
        return [False] * len(self._indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Frames of every env (``render_mode="rgb_array"``); under another render mode a
        ``None`` per env and a warning, as ``DummyVecEnv`` and ``SubprocVecEnv`` give."""
        if self.render_mode != "rgb_array":
            # The workers' render() would hand back what that mode renders (ansi text), not frames.
            warnings.warn(f"The render mode is {self.render_mode}, but this method assumes it is "
                          "`rgb_array` to obtain images.")
            return [None] * self.num_envs
        return list(self.venv.render())


def _same_options(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two envs' reset options are equal; options holding arrays (a start state), which
    ``==`` cannot compare, count as equal only when they are the same object."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except ValueError:  # numpy arrays inside: reset env by env
        return False


def _per_env(space: spaces.Space, actions: Any) -> list[Any] | None:
    """SB3's actions as a list of env i's ``actions[i]`` (DummyVecEnv's form) for a space
    without an array column (Dict, Tuple, Text), or None for what the vector env takes as it
    is: arrays, and Gymnasium's batched forms (a dict; a tuple for a Tuple space, which with as
    many envs as parts would read either way)."""
    if is_flat(space) or not isinstance(actions, (list, tuple, np.ndarray)):
        return None
    if isinstance(space, spaces.Tuple) and isinstance(actions, tuple):
        return None
    if isinstance(actions, np.ndarray) and actions.ndim == 0:  # one object, not one per env
        return None
    # Each env's action goes to it alone and is checked as that env's own (step_async_per_env),
    # so envs' dicts need not share fields: one may leave out an optional field another sets.
    return list(actions)
