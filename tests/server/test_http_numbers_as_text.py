"""A JSON client's numbers sent as strings (``["0.5"]``) are refused as an action outside the
space (422), as ``"1"`` is for a Discrete action, rather than stepping the env with text."""

from __future__ import annotations

from typing import Any, Iterator

import httpx
import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym.envs.base import Environment
from openenv_gym.envs.gym.env import GymEnv
from tests.server.live import live_server


class _BoxActionEnv(Environment):
    """Records each action it steps with."""

    def __init__(self) -> None:
        super().__init__()
        self.action_space = spaces.Box(-1, 1, (2,), np.float32)
        self.observation_space = spaces.Discrete(2)
        self.actions: list[Any] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: Any):
        self.actions.append(action)
        return 0, 0.0, False, False, {}


@pytest.mark.parametrize("factory", [
    pytest.param(_BoxActionEnv, id="bounds-enforced"),
    pytest.param(lambda: GymEnv("Pendulum-v1"), id="gym-actions-as-sent"),  # a 500 before
])
@pytest.mark.parametrize("first", ["0.5", 0.5], ids=["all-text", "one-number"])
def test_numbers_as_strings_in_a_box_action_are_a_422(factory, first) -> None:
    with live_server(factory) as live, httpx.Client(timeout=60) as client:
        sid = client.post(f"{live.url}/reset", json={}).json()["session_id"]
        shape = live.envs[0].action_space.shape
        action = [first] + ["0.5"] * (shape[0] - 1) if shape[0] > 1 else ["0.5"]
        reply = client.post(f"{live.url}/step", json={"session_id": sid, "action": action})
        assert reply.status_code == 422, reply.text
        error = reply.json()["error"]
        assert error["type"] == "InvalidActionError" and "not in the action space" in error["message"]
        if isinstance(live.envs[0], _BoxActionEnv):
            assert live.envs[0].actions == []  # the env never saw the text
        # The same numbers as numbers step.
        reply = client.post(f"{live.url}/step", json={"session_id": sid, "action": [0.5] * shape[0]})
        assert reply.status_code == 200, reply.text
