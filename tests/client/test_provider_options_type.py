"""``provider_options`` that is not a mapping is a TypeError that names ``provider_options``
and its form, not Python's "get_provider() argument after ** must be a mapping"."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym


@pytest.mark.parametrize("options", [[1], "fork", [("fork", False)], 5, {1: True}])
def test_every_env_kind_names_provider_options_and_its_form(options) -> None:
    from openenv_gym.trl import EnvPool

    for make in (lambda: gym.make("OpenEnv/Echo-v0", provider="process", provider_options=options),
                 lambda: openenv_gym.RemoteEnv("echo", provider="process", provider_options=options),
                 lambda: gym.make_vec("OpenEnv/Echo-v0", 2, provider="process", provider_options=options),
                 lambda: EnvPool("echo", 1, provider="process", provider_options=options)):
        with pytest.raises(TypeError, match=r"provider_options must be a dict .*"
                                            r"provider_options=\{'fork': False\}; got "):
            make()


def test_mappings_and_none_pass() -> None:
    from types import MappingProxyType

    from openenv_gym.providers import provider_options_dict

    assert provider_options_dict(None) == {}
    assert provider_options_dict(MappingProxyType({"fork": False})) == {"fork": False}
