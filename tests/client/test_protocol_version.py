"""A client refuses a server of another protocol version with a message that says so, before
its first message the server could not read ("unknown msgpack extension type 3")."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest
from gymnasium import spaces

from openenv_gym import __version__
from openenv_gym.client.spec import read_spec
from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.wire import PROTOCOL_VERSION
from openenv_gym.spaces import space_to_dict


def _spec(protocol: object, **more: object) -> dict:
    return {"protocol": protocol, "env": "echo", "observation_space": space_to_dict(spaces.Discrete(2)),
            "action_space": space_to_dict(spaces.Discrete(2)), "metadata": {}, **more}


@pytest.mark.parametrize("other", [PROTOCOL_VERSION - 1, PROTOCOL_VERSION + 1, None])
def test_another_protocol_version_is_refused_by_name(other: object) -> None:
    with pytest.raises(ProtocolError, match=rf"speaks protocol {other!r} and this client protocol "
                                            rf"{PROTOCOL_VERSION} \(openenv-gym {re.escape(__version__)}\): "
                                            "run the same openenv-gym version"):
        read_spec(_spec(other))


def test_the_servers_package_version_is_named_when_it_says_it() -> None:
    # Servers announce their openenv-gym version beside the protocol: the user learns which
    # side is behind, and that a custom image is not rebuilt for them.
    with pytest.raises(ProtocolError) as caught:
        read_spec(_spec(PROTOCOL_VERSION + 1, version="9.9.9"))
    text = str(caught.value)
    assert "(openenv-gym 9.9.9)" in text and "provider_options['image']" in text


def test_a_real_worker_speaks_this_clients_protocol() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process")
    try:
        assert env.unwrapped.remote_spec["protocol"] == PROTOCOL_VERSION
        assert read_spec(_spec(PROTOCOL_VERSION))[1] == spaces.Discrete(2)
    finally:
        env.close()
