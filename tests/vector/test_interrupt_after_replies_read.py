"""Ctrl-C after a vector step's replies were read, while they are copied into the batch, asks
for a reset on the general path (``step_async``/``step_wait``, or a ``step()`` that is not the
usual one) as on the usual step's straight line.

The interrupt lands between two workers' slices being copied: one worker's results (and episode
ends) are in the batch, the other's are not, and the episode bookkeeping after the copy never
ran. Stepping on would step envs that ended, or hand back a half-updated batch, silently. Real
workers; a real SIGINT, raised in this process right after the first slice is copied.
"""

from __future__ import annotations

import signal
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.vector import RemoteVectorEnv

pytestmark = pytest.mark.timeout(180)


def _ctrl_c_after_first_slice(envs: RemoteVectorEnv) -> None:
    """Deliver SIGINT (as Ctrl-C does) once the first worker's slice is copied into the batch."""
    real = envs._take_slice

    def take_then_interrupt(*args: Any) -> None:
        real(*args)
        del envs._take_slice  # once: the next steps copy as usual
        signal.raise_signal(signal.SIGINT)

    envs._take_slice = take_then_interrupt  # type: ignore[method-assign]


def _general(envs: RemoteVectorEnv, actions: Any) -> Any:
    envs.step_async(actions)
    return envs.step_wait()


def _general_per_env(envs: RemoteVectorEnv, actions: Any) -> Any:
    envs.step_async(actions)
    return envs.step_wait_per_env()


def _cartpole() -> RemoteVectorEnv:
    return gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="CartPole-v1", provider="process",
                        envs_per_worker=1)


def _frozen_lake() -> RemoteVectorEnv:
    # Its infos ({"prob": 1.0}) come inline: step() hands the replies to the general gathering.
    return gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id="FrozenLake-v1", provider="process",
                        envs_per_worker=1)


def _echo() -> RemoteVectorEnv:
    # Text observations: step() never takes the usual step.
    return gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider="process", envs_per_worker=1)


_INTS = lambda: np.array([0, 1])  # noqa: E731
_TEXT = lambda: {"message": ("ab", "c")}  # noqa: E731

_CASES: dict[str, tuple[Callable[[], RemoteVectorEnv], Callable[[], Any],
                        Callable[[RemoteVectorEnv, Any], Any], bool]] = {
    # name: (make, actions, how to step, whether step() takes the usual step)
    "step_async+step_wait": (_cartpole, _INTS, _general, True),
    "step_async+step_wait_per_env": (_cartpole, _INTS, _general_per_env, True),
    "step()-inline-infos": (_frozen_lake, _INTS, lambda e, a: e.step(a), True),
    "step()-text-obs": (_echo, _TEXT, lambda e, a: e.step(a), False),
    # A reset's replies are copied by the same _take_slice: cut there, half the envs are reset.
    "reset": (_cartpole, _INTS, lambda e, a: e.reset(seed=3), True),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_ctrl_c_while_the_replies_are_copied_asks_for_a_reset(case: str) -> None:
    make, actions, step, usual = _CASES[case]
    vec = make()
    envs = vec.unwrapped
    assert isinstance(envs, RemoteVectorEnv)
    try:
        vec.reset(seed=0)
        assert (envs._pending is None and envs._usual()) is usual
        _ctrl_c_after_first_slice(envs)
        with pytest.raises(KeyboardInterrupt):
            step(envs, actions())
        assert "_take_slice" not in vars(envs), "the interrupt did not land in the copy"
        with pytest.raises(gym.error.ResetNeeded, match=r"interrupted.*call reset\(\)"):
            vec.step(actions())
        vec.reset(seed=1)  # re-syncs every env: the vector env carries on
        for _ in range(3):
            obs, rewards, terminations, truncations, _ = vec.step(actions())
            assert rewards.shape == terminations.shape == truncations.shape == (2,)
        assert envs._reset_needed is None
    finally:
        vec.close()
