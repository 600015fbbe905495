"""What an env author's mistakes look like: named, typed errors; no session leaks; clashes warned."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from openenv_gym import catalog
from openenv_gym.catalog import EnvInfo
from openenv_gym.envs.base import Environment
from openenv_gym.server.service import EnvService


class Grid(Environment):
    """A 2-D walk whose ``fail`` attribute makes reset or step return something wrong."""

    def __init__(self, fail: str = "") -> None:
        super().__init__()
        self.fail = fail
        self.observation_space = spaces.Box(0, 4, (2,), np.int64)
        self.action_space = spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        bad = {"reset_info": {"handle": object()}, "reset_text": {"note": "x\ud800"}}
        return np.zeros(2, np.int64), bad.get(self.fail, {})

    def step(self, action):
        obs = np.array([100, -5]) if self.fail == "obs_out" else np.ones(2, np.int64)
        info = {"handle": object()} if self.fail == "step_info" else {}
        if self.fail in ("late_info", "late_text"):  # sendable on the first step (checked), not after
            late = {"handle": object()} if self.fail == "late_info" else {"note": "x\ud800"}
            info = {"n": 1} if getattr(self, "_stepped", False) is False else late
            self._stepped = True
        return obs, 0.0, self.fail == "step_info", False, info


@pytest.mark.parametrize("fail, named", [("reset_info", "info['handle'] of type object"),
                                         ("reset_text", "info['note'], text that is not valid UTF-8")])
def test_unsendable_reset_info_is_named_and_leaves_no_session(fail: str, named: str) -> None:
    # Text that is not UTF-8 (a lone surrogate) passed the check before: the reply then failed
    # to encode, the caller was told to fix its own text, and each retry leaked a session.
    service = EnvService(lambda: Grid(fail), max_sessions=2, idle_timeout=None)
    try:
        for _ in range(3):  # a retrying trainer must not fill the session table
            error = service.handle({"op": "reset"})["error"]
            assert error["type"] == "EnvServerError" and named in error["message"], error
        assert len(service.sessions) == 0
    finally:
        service.shutdown()


def test_unsendable_step_info_is_named_and_says_the_episode_ended() -> None:
    service = EnvService(lambda: Grid("step_info"), idle_timeout=None)
    try:
        sid = service.handle({"op": "reset"})["sid"]
        error = service.handle({"op": "step", "sid": sid, "action": 0})["error"]
        assert "info['handle']" in error["message"] and "call reset" in error["message"]
    finally:
        service.shutdown()


@pytest.mark.parametrize("fail, error", [
    ("late_info", r"cannot send message\['info'\]\['handle'\] of type object"),
    # Text that is not UTF-8 arrived as InvalidRequestError, telling the caller to fix text
    # it never sent: it is the env's error.
    ("late_text", r"the env's reply cannot be sent: .*not valid UTF-8"),
])
def test_a_later_step_s_unsendable_info_is_the_env_s_named_error_and_the_connection_survives(
        tmp_path, fail: str, error: str) -> None:
    from openenv_gym.client.transport import BinaryClient
    from openenv_gym.errors import EnvServerError
    from openenv_gym.server.binary import BinaryServer

    service = EnvService(lambda: Grid(fail), idle_timeout=None)
    server = BinaryServer(service, f"unix://{tmp_path}/w.sock")
    client = BinaryClient(server.address, 5.0)
    try:
        sid = client.request({"op": "reset"})["sid"]
        assert client.request({"op": "step", "sid": sid, "action": 0})["info"] == {"n": 1}
        with pytest.raises(EnvServerError, match=error) as refused:
            client.request({"op": "step", "sid": sid, "action": 0})
        # It did step: a caller told nothing would take the action for refused and resend it.
        assert str(refused.value).endswith("The step itself happened.")
        assert client.request({"op": "state", "sid": sid})["state"]["step_count"] == 2
        assert client.request({"op": "reset", "sid": sid})["sid"] == sid  # still framed
    finally:
        client.drop()
        server.close()
        service.shutdown()


def test_an_observation_outside_the_space_is_an_error_naming_the_space() -> None:
    service = EnvService(lambda: Grid("obs_out"), idle_timeout=None)
    try:
        sid = service.handle({"op": "reset"})["sid"]
        reply = service.handle({"op": "step", "sid": sid, "action": 0})
        assert not reply["ok"] and "outside its observation space Box(0, 4" in reply["error"]["message"]
        assert reply["error"]["builtin"] == "ValueError"
        # Checked on reset and each episode's first step (as Gymnasium's env checker), not on
        # every step; the session survives.
        assert service.step(sid, 0)["reward"] == 0.0
        service.reset(sid)
        with pytest.raises(ValueError, match="outside its observation space"):
            service.step(sid, 0)
    finally:
        service.shutdown()


def test_a_plugin_env_with_a_taken_name_or_id_is_ignored_with_a_warning(monkeypatch) -> None:
    clash_name = EnvInfo("echo", "OpenEnv/Mine-v0", "mine.env:Env", "reuses echo's name")
    clash_id = EnvInfo("mine", "OpenEnv/Echo-v0", "mine.env:Env", "reuses echo's id")
    monkeypatch.setattr(catalog, "_plugin_envs", lambda: [clash_name, clash_id])
    monkeypatch.setattr(catalog, "_cache", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs = catalog.all_envs()
    assert clash_name not in envs and clash_id not in envs
    assert catalog.get_env_info("OpenEnv/Echo-v0").entry_point == "openenv_gym.envs.echo.env:EchoEnv"
    text = " ".join(str(w.message) for w in caught)
    assert "'echo'" in text and "OpenEnv/Echo-v0" in text and "is ignored" in text


def test_an_entry_point_that_is_no_environment_says_what_to_derive_from(monkeypatch) -> None:
    from openenv_gym.errors import InvalidRequestError
    from openenv_gym.server.main import build_service

    plain = EnvInfo("plaincart", "OpenEnv/PlainCart-v0",
                    "gymnasium.envs.classic_control.cartpole:CartPoleEnv", "a plain gymnasium.Env")
    monkeypatch.setattr(catalog, "_plugin_envs", lambda: [plain])
    monkeypatch.setattr(catalog, "_cache", None)
    with pytest.raises(InvalidRequestError, match=r"not a subclass of openenv_gym.envs.base.Environment.*Gym-v0"):
        build_service("plaincart")


def test_an_env_without_spaces_says_how_to_declare_them() -> None:
    class NoSpaces(Environment):
        def reset(self, *, seed=None, options=None):
            return 0, {}

    with pytest.raises(TypeError, match=r"NoSpaces declares no action space: set the class attribute action_model"):
        EnvService(NoSpaces)


def test_gym_v0_passes_an_out_of_space_observation_on_as_a_local_env_does() -> None:
    # A local CartPole returns a cart past x=4.8 (its space's bound) and ends the episode;
    # Gym-v0 passes it on (check_observations off), where our own envs would refuse it.
    from openenv_gym.envs.gym.env import GymEnv

    class Strict(GymEnv):
        check_observations = True

    for cls, refused in ((GymEnv, False), (Strict, True)):
        service = EnvService(lambda: cls("CartPole-v1"), idle_timeout=None)
        try:
            sid = service.handle({"op": "reset", "seed": 0})["sid"]
            service.handle({"op": "set_attr", "sid": sid, "name": "state", "value": [10.0, 0.0, 0.0, 0.0]})
            reply = service.handle({"op": "step", "sid": sid, "action": 0})
            if refused:
                assert "outside its observation space" in reply["error"]["message"]
            else:
                assert reply["obs"][0] > 4.8 and reply["terminated"], reply
        finally:
            service.shutdown()


class TupleKeyInfo(Environment):
    """Reports infos keyed by tuples (a grid's cells), which the wire carries as keys."""

    def __init__(self, key: Any = (0, 1)) -> None:
        super().__init__()
        self.key = key
        self.observation_space = spaces.Discrete(2)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {"visits": {self.key: 1}}

    def step(self, action):
        return 0, 0.0, False, False, {"visits": {self.key: 2}}


def test_an_info_keyed_by_tuples_reaches_the_caller() -> None:
    # The reset check refused it ("a key of type tuple"), though the wire carries tuple keys.
    service = EnvService(TupleKeyInfo, idle_timeout=None)
    try:
        reply = service.handle({"op": "reset"})
        assert reply["info"] == {"visits": {(0, 1): 1}}, reply
        step = service.handle({"op": "step", "sid": reply["sid"], "action": 1})
        assert step["info"] == {"visits": {(0, 1): 2}}, step
    finally:
        service.shutdown()


def test_a_tuple_key_holding_a_frozenset_is_named() -> None:
    # It would arrive as a list, which cannot be a key: the peer could not decode the reply.
    service = EnvService(lambda: TupleKeyInfo((0, frozenset({1}))), idle_timeout=None)
    try:
        error = service.handle({"op": "reset"})["error"]
        assert "info['visits'] with a key (0, frozenset({1})) holding a frozenset" in error["message"], error
        assert len(service.sessions) == 0
    finally:
        service.shutdown()


class Returns(Environment):
    """An env whose reset or step returns what its author got wrong (``mistake``)."""

    def __init__(self, mistake: str) -> None:
        super().__init__()
        self.mistake = mistake
        self.observation_space = spaces.Dict({"x": spaces.Discrete(2), "y": spaces.Discrete(2)})
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs = {"x": 0, "y": 1}
        return obs if self.mistake == "reset_obs_only" else (obs, {})

    def step(self, action):
        if self.mistake == "old_step":
            return {"x": 0, "y": 1}, 1.0, False, {}
        return {"x": 0, "y": 1}, ("1.0" if self.mistake == "text_reward" else None), False, False, {}


@pytest.mark.parametrize("mistake, call, named", [
    # Before: a two-key observation dict was unpacked by its keys ("an info of type str").
    ("reset_obs_only", "reset", "the env's reset() returned a dict; it must return the tuple (obs, info)"),
    # Before: "not enough values to unpack (expected 5, got 4)".
    ("old_step", "step", "returned a 4-tuple; it must return the tuple (obs, reward, terminated, truncated, info)"),
    # Before: read as the number 1.0.
    ("text_reward", "step", "returned a reward of type str ('1.0'); a reward is a number"),
    ("none_reward", "step", "returned a reward of type NoneType"),
])
def test_a_reset_or_step_returning_the_wrong_things_is_named(mistake: str, call: str, named: str) -> None:
    service = EnvService(lambda: Returns(mistake), idle_timeout=None)
    try:
        reply = service.handle({"op": "reset"})
        if call == "step":
            reply = service.handle({"op": "step", "sid": reply["sid"], "action": 0})
        assert reply["error"]["type"] == "EnvServerError" and named in reply["error"]["message"], reply
    finally:
        service.shutdown()


def _lookup(table: dict[str, int], key: str) -> int:
    return table[key]  # the author's bug: a key the table lacks


class RaisesInStep(Environment):
    """Its step raises a KeyError two calls deep in its own code."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Discrete(2)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        return _lookup({}, "missing"), 0.0, False, False, {}


def test_an_env_s_own_exception_shows_its_traceback_in_the_trainer(tmp_path) -> None:
    # The trainer saw only "KeyError: 'missing'": no file or line of the env's code, and the
    # worker logged nothing, so its author could not tell where the step failed.
    import traceback

    from openenv_gym.client.transport import BinaryClient
    from openenv_gym.errors import EnvServerError
    from openenv_gym.server.binary import BinaryServer

    service = EnvService(RaisesInStep, idle_timeout=None)
    server = BinaryServer(service, f"unix://{tmp_path}/w.sock")
    client = BinaryClient(server.address, 5.0)
    try:
        sid = client.request({"op": "reset"})["sid"]
        with pytest.raises(EnvServerError) as raised:
            client.request({"op": "step", "sid": sid, "action": 0})
        assert str(raised.value) == "KeyError: 'missing'" and isinstance(raised.value, KeyError)
        shown = "".join(traceback.format_exception(raised.value))  # what an uncaught one prints
        assert "the env's traceback, in the worker:" in shown
        assert f'File "{__file__}"' in shown and "in _lookup" in shown and "return table[key]" in shown
        # From the env's code on: the worker's dispatch is no part of the author's problem.
        assert "service.py" not in shown.split("in the worker:")[1]
        assert client.request({"op": "reset", "sid": sid})["sid"] == sid  # the session serves on
    finally:
        client.drop()
        server.close()
        service.shutdown()
