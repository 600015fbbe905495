"""A client refuses a server of another protocol version with a message that says so, before
its first message the server could not read ("unknown msgpack extension type 3")."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium import spaces

from openenv_gym.client.spec import read_spec
from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.wire import PROTOCOL_VERSION
from openenv_gym.spaces import space_to_dict


def _spec(protocol: object) -> dict:
    return {"protocol": protocol, "env": "echo", "observation_space": space_to_dict(spaces.Discrete(2)),
            "action_space": space_to_dict(spaces.Discrete(2)), "metadata": {}}


@pytest.mark.parametrize("other", [PROTOCOL_VERSION - 1, PROTOCOL_VERSION + 1, None])
def test_another_protocol_version_is_refused_by_name(other: object) -> None:
    with pytest.raises(ProtocolError, match=rf"speaks protocol {other!r} and this client protocol "
                                            rf"{PROTOCOL_VERSION}: run the same openenv-gym version"):
        read_spec(_spec(other))


def test_a_real_worker_speaks_this_clients_protocol() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process")
    try:
        assert env.unwrapped.remote_spec["protocol"] == PROTOCOL_VERSION
        assert read_spec(_spec(PROTOCOL_VERSION))[1] == spaces.Discrete(2)
    finally:
        env.close()
