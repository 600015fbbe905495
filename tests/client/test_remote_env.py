"""RemoteEnv through gym.make on real workers: episodes, checks, trajectories, bad actions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import openenv_gym
from openenv_gym.errors import InvalidActionError, ProtocolError


def test_echo_episode_through_gym_make(provider: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider=provider, max_steps=3)
    try:
        obs, info = env.reset(seed=0)
        assert obs["echo"] == "" and int(obs["length"]) == 0
        rewards, truncs = [], []
        for msg in ["a", "héllo wörld ✓", "x" * 10]:
            obs, reward, terminated, truncated, info = env.step({"message": msg})
            assert obs["echo"] == msg and int(obs["length"]) == len(msg)
            assert env.observation_space.contains(obs)
            rewards.append(reward)
            truncs.append(truncated)
            assert not terminated
        assert rewards == pytest.approx([0.1, 1.3, 1.0])
        assert truncs == [False, False, True]
        state = env.unwrapped.state()
        assert state["step_count"] == 3 and state["last_message"] == "x" * 10
    finally:
        env.close()


def test_a_closed_env_says_so_and_starts_nothing() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process", render_mode="ansi")
    env.reset(seed=0)
    worker = env.unwrapped.worker
    env.close()
    assert not worker.alive()
    for call in (env.reset, lambda: env.step({"message": "x"}), env.unwrapped.state, env.render):
        with pytest.raises(gym.error.ClosedEnvironmentError, match=r"RemoteEnv \(echo\) is closed"):
            call()
    env.close()  # twice is fine
    assert env.unwrapped.worker is None and not worker.alive()


def test_check_env_passes_for_echo(provider: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider=provider)
    try:
        check_env(env.unwrapped, skip_render_check=False)
    finally:
        env.close()


def test_check_env_passes_for_gym_cartpole(provider: str) -> None:
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider, render_mode="rgb_array")
    try:
        check_env(env.unwrapped)
        env.reset(seed=0)
        frame = env.render()
        assert isinstance(frame, np.ndarray) and frame.shape == (400, 600, 3) and frame.dtype == np.uint8
    finally:
        env.close()


def _rollout(env: gym.Env, seed: int, steps: int, actions_seed: int) -> list:
    space = env.action_space
    space.seed(actions_seed)
    out = []
    obs, _ = env.reset(seed=seed)
    out.append(np.asarray(obs).copy())
    for _ in range(steps):
        action = space.sample()
        obs, reward, terminated, truncated, _ = env.step(action)
        out.append((np.asarray(obs).copy(), float(reward), terminated, truncated))
        if terminated or truncated:
            obs, _ = env.reset()
            out.append(np.asarray(obs).copy())
    return out


def _same(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            np.testing.assert_array_equal(x[0], y[0])
            assert x[1:] == y[1:]
        else:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_remote_trajectories_equal_local(provider: str, env_id: str) -> None:
    remote = gym.make("OpenEnv/Gym-v0", env_id=env_id, provider=provider)
    local = gym.make(env_id)
    try:
        for seed in (0, 1, 2):
            _same(_rollout(remote, seed, 120, seed + 7), _rollout(local, seed, 120, seed + 7))
    finally:
        remote.close()
        local.close()


@pytest.fixture
def echo_env(provider: str):
    env = gym.make("OpenEnv/Echo-v0", provider=provider).unwrapped
    env.reset(seed=0)
    yield env
    env.close()


@pytest.mark.parametrize(
    "action, fragment",
    [
        ("just a string", "must be a mapping"),
        ({"message": 42}, "message"),
        ({}, "Field required"),
        ({"message": "hi", "extra": 1}, "extra"),
        ({"message": "x" * 70_000}, "at most 65536"),
        ([1, 2, 3], "must be a mapping"),
    ],
)
def test_malformed_actions_are_typed_errors_and_session_continues(echo_env, action, fragment) -> None:
    sid = echo_env.session_id
    with pytest.raises(InvalidActionError, match=fragment):
        echo_env.step(action)
    obs, reward, *_ = echo_env.step({"message": "still here"})
    assert obs["echo"] == "still here" and echo_env.session_id == sid


def test_action_outside_space_is_rejected_for_space_envs(provider: str) -> None:
    env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider).unwrapped
    try:
        env.reset(seed=0)
        for bad in (2, -1, 0.5, "left", [0, 1]):
            with pytest.raises(InvalidActionError, match="not in the action space"):
                env.step(bad)
        obs, *_ = env.step(1)
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def test_box_bounds_are_the_served_env_s_to_apply(provider: str) -> None:
    # Pendulum clips a torque of 5 itself; refusing it would break a loop that works locally.
    ours = gym.make("OpenEnv/Gym-v0", env_id="Pendulum-v1", provider=provider)
    local = gym.make("Pendulum-v1")
    try:
        np.testing.assert_array_equal(ours.reset(seed=0)[0], local.reset(seed=0)[0])
        for torque in (5.0, -9.0, 1.0):
            action = np.array([torque], dtype=np.float32)
            got, want = ours.step(action), local.step(action)
            np.testing.assert_array_equal(got[0], want[0])
            assert got[1] == want[1]
        for bad in (np.array([np.nan], np.float32), np.array([np.inf], np.float32),
                    np.array([1.0, 2.0], np.float32)):
            with pytest.raises(InvalidActionError, match="not in the action space"):
                ours.step(bad)
    finally:
        ours.close()
        local.close()


@pytest.mark.parametrize("env_id", ["FrozenLake-v1", "Blackjack-v1", "CliffWalking-v1"])
def test_discrete_observations_arrive_as_the_python_ints_a_local_env_returns(env_id: str) -> None:
    """... and rewards as the type the env gives: FrozenLake's and CliffWalking's ints,
    Blackjack's floats."""
    import json

    ours = gym.make("OpenEnv/Gym-v0", env_id=env_id, provider="process")
    local = gym.make(env_id)
    try:
        got, want = ours.reset(seed=3)[0], local.reset(seed=3)[0]
        for action in (1, 0, 1, 0):
            assert got == want and type(got) is type(want)
            if isinstance(want, tuple):
                assert [type(v) for v in got] == [type(v) for v in want] == [int] * len(want)
            json.dumps(got)  # what a local discrete env's observation allows
            got, reward, done, trunc, _ = ours.step(action)
            want, local_reward, *_ = local.step(action)
            assert reward == local_reward and type(reward) is type(local_reward)
            if done or trunc:
                break
    finally:
        ours.close()
        local.close()


def test_an_env_cannot_be_pickled_or_copied_and_says_what_to_do() -> None:
    import copy
    import pickle

    env = gym.make("OpenEnv/Echo-v0", provider="process")
    try:
        # (copy.copy of the wrapped env copies only the wrappers, as it does locally.)
        for copier, target in ((pickle.dumps, env), (copy.deepcopy, env), (copy.copy, env.unwrapped)):
            with pytest.raises(TypeError, match=r"holds live connections .* gym\.make\(env\.spec\)"):
                copier(target)
        assert env.reset(seed=0)[0]["echo"] == ""  # the original is untouched
    finally:
        env.close()


def test_attaches_to_a_worker_by_the_address_openenv_gym_ps_prints() -> None:
    from openenv_gym.providers.process import ProcessProvider

    provider = ProcessProvider()
    [worker] = provider.start("echo")
    try:
        assert worker.address.startswith("unix://")
        env = gym.make("OpenEnv/Echo-v0", base_url=worker.address)
        env.reset(seed=0)
        assert env.step({"message": "hey"})[0]["echo"] == "hey"
        env.close()
        assert worker.alive()  # an attached env leaves the worker to whoever started it
        with pytest.raises(openenv_gym.WorkerConnectionError, match="cannot connect"):
            gym.make("OpenEnv/Echo-v0", base_url=worker.address + ".missing")
        with pytest.raises(openenv_gym.InvalidRequestError, match="openenv-gym ps"):
            gym.make("OpenEnv/Echo-v0", base_url="ftp://127.0.0.1/x")
        # Another env's server is refused, naming the id that attaches to it.
        with pytest.raises(openenv_gym.InvalidRequestError, match=r"serves env 'echo', not 'gym'.*OpenEnv/Echo-v0"):
            gym.make("OpenEnv/Gym-v0", base_url=worker.address)
        with pytest.raises(openenv_gym.InvalidRequestError, match="vector env starts workers of its own"):
            gym.make_vec("OpenEnv/Echo-v0", 2, base_url=worker.address)
    finally:
        provider.stop_all([worker])


def test_a_single_env_s_wrapper_attributes_are_the_served_env_s(provider: str) -> None:
    ours = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider)
    local = gym.make("CartPole-v1")
    try:
        with pytest.raises(AttributeError):  # no served env before the first reset
            ours.get_wrapper_attr("gravity")
        for env in (ours, local):
            env.reset(seed=0)
            env.set_wrapper_attr("gravity", 1000.0)
        assert ours.get_wrapper_attr("gravity") == ours.unwrapped.call("gravity") == 1000.0
        for _ in range(3):
            np.testing.assert_allclose(ours.step(1)[0], local.step(1)[0])  # the dynamics changed
        assert ours.set_wrapper_attr("nosuch", 1, force=False) is False
    finally:
        ours.close()
        local.close()


def test_oversized_frame_is_refused_and_connection_stays_framed(echo_env) -> None:
    client = echo_env._client
    client.max_frame = 1 << 30  # let this client send what the server must refuse
    huge = {"op": "step", "sid": echo_env.session_id, "action": {"message": "y" * (65 << 20)}}
    with pytest.raises(ProtocolError, match="exceeds"):
        client.request(huge)
    obs, *_ = echo_env.step({"message": "after"})
    assert obs["echo"] == "after"


def test_gym_make_with_module_prefix_works_in_a_fresh_interpreter() -> None:
    import subprocess
    import sys

    code = (
        "import sys, gymnasium as gym\n"
        "env = gym.make('openenv_gym:OpenEnv/Echo-v0', provider='process')\n"
        "obs, _ = env.reset(seed=1)\n"
        "print(env.step({'message': 'ok'})[0]['echo'])\n"
        "print(*(m in sys.modules for m in ('fastapi', 'uvicorn', 'pydantic', 'openenv_gym.server.service')))\n"
        "env.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # The trainer never loads the worker's stack, though it starts a (forked) worker.
    assert out.stdout.split() == ["ok", "False", "False", "False", "False"]


def test_unknown_env_name_is_a_clear_error() -> None:
    with pytest.raises(openenv_gym.UnknownEnvironmentError, match="known: echo"):
        openenv_gym.RemoteEnv("nope", provider="process")
    with pytest.raises(openenv_gym.InvalidRequestError, match="timeout must be a positive number"):
        openenv_gym.RemoteEnv("echo", provider="process", timeout="soon")


def test_bad_env_kwargs_raise_the_envs_own_error_typed(provider: str) -> None:
    import os
    import re

    from openenv_gym.providers._runtime import runtime_dir

    def ours() -> set[str]:  # other tests' envs (a doctest's, not yet collected) may be open
        return {e for e in os.listdir(runtime_dir()) if e.startswith(f"{os.getpid()}-")}

    before = ours()
    # The worker's log says what stopped it; the provider raises that, as the env typed it.
    with pytest.raises(openenv_gym.InvalidRequestError,
                       match=re.escape("cannot make env 'echo' with {'max_steps': 0}: max_steps must be >= 1")):
        gym.make("OpenEnv/Echo-v0", provider=provider, max_steps=0)
    # The failed worker leaves no folder, socket or log of ours behind.
    assert ours() <= before


def test_an_env_that_raises_while_made_reaches_the_caller_with_the_workers_traceback() -> None:
    # CartPole takes no `bogus`: gym.make raises a TypeError inside the worker, not ours.
    with pytest.raises(openenv_gym.EnvServerError, match="cannot make env 'gym'") as raised:
        gym.make("OpenEnv/Gym-v0", provider="process", env_id="CartPole-v1", bogus=1)
    message = str(raised.value)
    assert "TypeError: " in message and "bogus" in message
    assert "Traceback (most recent call last)" in message  # where it came from, from the log


def test_a_call_may_take_longer_than_the_longest_step_the_env_allows() -> None:
    # Git allows a command 120 s (max_timeout): a client giving up at 60 s would replace a
    # worker whose step was within the env's own limit. An explicit timeout stays as given.
    git = gym.make("OpenEnv/Git-v0", provider="process")
    echo = gym.make("OpenEnv/Echo-v0", provider="process")
    quick = gym.make("OpenEnv/Git-v0", provider="process", timeout=5, max_timeout=200)
    try:
        # 120 s of command, then the checks: 10 s of git calls and a unittest check's 60 s.
        assert git.unwrapped.remote_spec["max_step_seconds"] == 190.0
        assert git.unwrapped._client.timeout == 220.0
        assert echo.unwrapped._client.timeout == 60.0 and "max_step_seconds" not in echo.unwrapped.remote_spec
        assert quick.unwrapped._client.timeout == 5.0
    finally:
        for env in (git, echo, quick):
            env.close()
    envs = gym.make_vec("OpenEnv/Git-v0", num_envs=1, provider="process", env_kwargs={"max_timeout": 200})
    try:
        assert envs.unwrapped.step_timeout == 300.0  # 200 + 70 s of checks + 30
        assert [client.timeout for client in envs.unwrapped.pool.clients] == [300.0]
    finally:
        envs.close()


def test_an_attached_env_dropped_without_close_ends_its_session() -> None:
    # A notebook cell that attaches (base_url=) and is run again drops the old env without
    # close(): its session must end with it, not linger on the server until --idle-timeout
    # and count against --max-sessions.
    import gc

    from openenv_gym.client.transport import BinaryClient
    from openenv_gym.providers.process import ProcessProvider

    provider = ProcessProvider()
    [worker] = provider.start("echo")
    probe = BinaryClient(worker.address, 10.0)
    try:
        for i in range(5):
            env = gym.make("OpenEnv/Echo-v0", base_url=worker.address)
            env.reset(seed=i)
            env.step({"message": "hi"})
            del env
            gc.collect()
        assert probe.request({"op": "health"})["sessions"] == 0
        env = gym.make("OpenEnv/Echo-v0", base_url=worker.address)
        env.reset(seed=0)
        assert probe.request({"op": "health"})["sessions"] == 1
        env.close()  # close() still ends it, once
        del env
        gc.collect()
        assert probe.request({"op": "health"})["sessions"] == 0
    finally:
        probe.drop()
        provider.stop_all([worker])
