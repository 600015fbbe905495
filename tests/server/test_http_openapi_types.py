"""/openapi.json names the served env's action and observation shapes, so that a client
generated from it (Go, TypeScript) gets typed fields: before, ``action`` and ``observation``
were any JSON value in every server's document, whatever the env."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import requests

from openenv_gym.server.openapi import space_schema
from tests.conftest import ServedEnv

#: case, (env, its server's --env-kwargs, a valid action, an action the server refuses as
#: outside the space).
CASES = {
    "echo": ("echo", {}, {"message": "hi"}, {"message": 5}),
    # Echo's frame_shape adds a field its model lacks: the document must not forbid it.
    "echo-frame": ("echo", {"frame_shape": [2, 3]}, {"message": "hi"}, {"message": 5}),
    "gym": ("gym", {}, 1, 2),  # CartPole-v1: Discrete(2)
    # A Box inside a Dict action is checked against its bounds (a top-level one of a Gym-v0
    # env goes as sent): the document says so.
    "gym-box-in-dict": ("gym", {"env_id": "tests.server.box_in_dict_env:OpenEnvTest/BoxInDict-v0"},
                        {"choice": 1, "force": [0.5, -1.0]}, {"choice": 1, "force": [5.0, 5.0]}),
    "finrl": ("finrl", {}, [0.1] * 20, [0.1] * 19),  # Box(-1, 1, (20,))
    "atari": ("atari", {}, 2, 6),  # Pong: Discrete(6)
}


def _field(doc: dict[str, Any], model: str, name: str) -> dict[str, Any]:
    """The schema of ``model.name``, resolvable against the document's components."""
    return {**doc["components"]["schemas"][model]["properties"][name], "components": doc["components"]}


@pytest.mark.parametrize("case", list(CASES))
def test_openapi_types_the_action_and_observation_the_server_takes_and_sends(case: str) -> None:
    env, env_kwargs, valid, refused = CASES[case]
    server = ServedEnv(env, "--env-kwargs", json.dumps(env_kwargs))
    try:
        doc = requests.get(server.http + "/openapi.json", timeout=30).json()
        action, observation = _field(doc, "StepRequest", "action"), _field(doc, "StepResponse", "observation")
        assert "type" in action and "type" in observation, (action, observation)

        reset = requests.post(server.http + "/reset", json={"seed": 1}, timeout=60).json()
        jsonschema.validate(reset["observation"], _field(doc, "ResetResponse", "observation"))
        sid = reset["session_id"]
        jsonschema.validate(valid, action)
        r = requests.post(server.http + "/step", json={"session_id": sid, "action": valid}, timeout=60)
        assert r.status_code == 200, r.text
        jsonschema.validate(r.json()["observation"], observation)

        # What the server refuses, the document says it takes not: a generated client's own
        # validation catches it before it is sent.
        r = requests.post(server.http + "/step", json={"session_id": sid, "action": refused}, timeout=60)
        assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidActionError", r.text
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(refused, action)
    finally:
        server.stop()


def test_space_schema_of_spaces_as_spec_describes_them() -> None:
    box = {"type": "Box", "shape": [2, 3], "dtype": "<f4", "low": "-inf", "high": 1.0}
    assert space_schema(box) == {
        "type": "array", "minItems": 2, "maxItems": 2,
        "items": {"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "number", "maximum": 1.0}}}
    # A reply writes a non-finite float as null.
    assert space_schema({**box, "shape": []}, reply=True) == {
        "anyOf": [{"type": "number", "maximum": 1.0}, {"type": "null"}]}
    pair = {"type": "Tuple", "spaces": [{"type": "Discrete", "n": 3, "start": 1},
                                       {"type": "Text", "min_length": 1, "max_length": 4, "charset": "ab"}]}
    jsonschema.validate([3, "ab"], space_schema(pair))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([0, "ab"], space_schema(pair))
    assert space_schema({"type": "Graph", "node_space": None, "edge_space": None}) == {}
