"""A served env whose action schema gives a field a list of types (``["string", "null"]``,
as a model's ``json_schema_extra`` may) still gets the vector precheck of its other fields;
it failed the vector env's construction with a bare ``unhashable type: 'list'``."""

from __future__ import annotations

from gymnasium import spaces
from pydantic import Field

from openenv_gym.envs.base import Environment
from openenv_gym.models import Action
from openenv_gym.server.service import EnvService
from openenv_gym.vector.precheck import action_checker


class Say(Action):
    text: str = Field("", json_schema_extra={"type": ["string", "null"]})
    times: int = Field(1, ge=1)


class SayEnv(Environment):
    action_model = Say
    observation_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return 0, {}

    def step(self, action):
        return 0, 0.0, False, False, {}


def test_a_field_with_a_type_list_is_left_to_the_worker() -> None:
    service = EnvService(SayEnv, idle_timeout=None)
    try:
        spec = service.spec()
    finally:
        service.shutdown()
    assert spec["action_check"] == "schema"
    check = action_checker(spec, None)
    assert check is not None
    assert check({"text": "hi", "times": 2}) is None
    assert check({"text": None}) is None  # the worker decides this field
    assert "times" in check({"times": 0})
