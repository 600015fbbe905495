"""Worker faults seen from the client: a killed worker, a killed owner, raw garbage."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import pytest

import openenv_gym
from openenv_gym.errors import WorkerError
from openenv_gym.protocol.sockets import connect, parse_address, read_message
from openenv_gym.protocol.wire import encode
from tests.conftest import ctrl_c_after, stop_process
from tests.security.helpers import fork_servers_of, sentinels_of, wait_until, workers_of


def _kill_worker(env: openenv_gym.RemoteEnv) -> None:
    worker = env._worker
    if hasattr(worker, "container"):  # docker: kill the container as `docker kill` would
        worker.container.kill()
    else:
        os.kill(worker.pid, signal.SIGKILL)


def _freeze(env: openenv_gym.RemoteEnv) -> None:
    """Stop the worker and wait until every thread of it is stopped (group stop is not atomic)."""
    if hasattr(env._worker, "container"):
        env._worker.container.pause()  # the cgroup freezer returns once frozen
        return
    stop_process(env._worker.pid)


def test_killed_worker_raises_clearly_within_timeout_then_reset_recovers(provider: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider=provider, timeout=5.0).unwrapped
    try:
        env.reset(seed=0)
        _kill_worker(env)
        start = time.monotonic()
        with pytest.raises(WorkerError, match="worker") as failure:
            env.step({"message": "x"})
        assert time.monotonic() - start < 5.0 + 1.0
        # It says what happened and what to do, as the vector env does.
        text = str(failure.value)
        assert "The worker stopped" in text and "the next reset() tries to start a fresh one" in text, text
        if provider == "process":
            assert "killed by signal 9 (SIGKILL)" in text and "worker ready" in text, text  # + its log
        # The next reset replaces the dead worker and starts a fresh episode.
        obs, _ = env.reset(seed=0)
        assert obs["echo"] == ""
        assert env.step({"message": "back"})[0]["echo"] == "back"
        assert env._worker.restarts == 1
    finally:
        env.close()


@pytest.mark.parametrize("call", ["render", "state", "call", "get_wrapper_attr"])
def test_calls_besides_step_on_a_killed_worker_say_how_it_ended_and_what_to_do(call: str) -> None:
    # They said only "cannot connect to worker at unix://...: Connection refused", where a
    # step's error names the kill, the log tail and that reset() starts a fresh worker.
    env = gym.make("OpenEnv/Echo-v0", provider="process", render_mode="ansi", timeout=30.0)
    try:
        env.reset(seed=0)
        _kill_worker(env.unwrapped)
        calls = {"render": env.render, "state": env.unwrapped.state,
                 "call": lambda: env.unwrapped.call("max_steps"),
                 "get_wrapper_attr": lambda: env.get_wrapper_attr("max_steps")}
        with pytest.raises(WorkerError) as failure:
            calls[call]()
        text = str(failure.value)
        assert "The worker stopped: killed by signal 9 (SIGKILL)" in text, text
        assert "the next reset() tries to start a fresh one" in text and "worker ready" in text, text
        env.reset(seed=0)
        assert env.unwrapped.call("max_steps") == 100
    finally:
        env.close()


def test_a_call_on_a_frozen_worker_names_its_state_and_the_next_step_asks_for_a_reset() -> None:
    env = gym.make("OpenEnv/Echo-v0", provider="process", timeout=1.0).unwrapped
    try:
        env.reset(seed=0)
        _freeze(env)
        with pytest.raises(openenv_gym.WorkerTimeoutError) as failure:
            env.call("max_steps")
        assert "the worker's state: stopped (SIGSTOP" in str(failure.value), failure.value
        assert "call reset(), which replaces the worker" in str(failure.value), failure.value
        # The worker may still owe the call its answer: a step does not wait out a timeout behind it.
        with pytest.raises(openenv_gym.ResetNeededError, match="the last call timed out"):
            env.step({"message": "x"})
        env.reset(seed=0)
        assert env.step({"message": "back"})[0]["echo"] == "back"
    finally:
        env.close()


def test_stuck_worker_times_out(provider: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider=provider, timeout=1.0).unwrapped
    try:
        env.reset(seed=0)
        _freeze(env)
        start = time.monotonic()
        with pytest.raises(openenv_gym.WorkerTimeoutError, match="did not answer"):
            env.step({"message": "x"})
        assert time.monotonic() - start < 3.0
        if provider == "docker":
            env._worker.container.unpause()
        else:
            os.kill(env._worker.pid, signal.SIGCONT)
    finally:
        env.close()


def test_owner_killed_with_sigkill_leaves_no_worker() -> None:
    code = (
        "import gymnasium as gym, openenv_gym, sys, time\n"
        "envs = [gym.make('OpenEnv/Echo-v0', provider='process') for _ in range(2)]\n"
        "[e.reset() for e in envs]\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ready"
        assert len(workers_of(owner.pid)) == 2
        assert len(fork_servers_of(owner.pid)) == 1  # forked them both
        owner.send_signal(signal.SIGKILL)
        owner.wait(30)
        # Generous bounds: the workers notice within a poll, but exit late on a loaded machine.
        wait_until(lambda: not (workers_of(owner.pid) or fork_servers_of(owner.pid)
                                or sentinels_of(owner.pid)), 60)
        assert workers_of(owner.pid) == set()
        assert fork_servers_of(owner.pid) == set()
        assert sentinels_of(owner.pid) == set()  # its server ended on its own, and said so
        # Nobody is left to clean the owner's pool folders (sockets, logs): the workers did.
        from openenv_gym.providers._runtime import runtime_dir

        def folders() -> list[str]:
            return [e for e in os.listdir(runtime_dir()) if e.startswith(f"{owner.pid}-")]

        wait_until(lambda: not folders(), 60)
        assert not folders()
    finally:
        if owner.poll() is None:
            owner.kill()


def test_garbage_bytes_on_binary_path_get_error_replies(provider: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider=provider).unwrapped
    try:
        env.reset(seed=0)
        sock = connect(env._worker.address, timeout=5.0)
        # A well-framed frame of random bytes, then a truncated msgpack map: error replies,
        # and the same connection still serves a valid request afterwards.
        for payload in (os.urandom(64), b"\x85\xa2op"):
            sock.sendall(len(payload).to_bytes(4, "little") + payload)
            reply = read_message(sock)
            assert reply["ok"] is False and reply["error"]["type"] in {"ProtocolError", "InvalidRequestError"}
        sock.sendall(encode({"op": "step", "sid": env.session_id, "action": {"message": "ok"}}))
        assert read_message(sock)["obs"]["echo"] == "ok"
        # Random bytes as a header announce a huge frame; the server refuses it without reading it
        # all, and a client that gives up and closes leaves the worker serving.
        sock.sendall(b"\xff\xff\xff\x7f" + os.urandom(100))
        sock.close()
        assert env.step({"message": "alive"})[0]["echo"] == "alive"
    finally:
        env.close()


def test_unknown_op_and_wrong_field_types_are_typed(provider: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider=provider).unwrapped
    try:
        env.reset(seed=0)
        client = env._client
        with pytest.raises(openenv_gym.InvalidRequestError, match="unknown op"):
            client.request({"op": "explode"})
        with pytest.raises(openenv_gym.InvalidRequestError, match="sid must be a string"):
            client.request({"op": "step", "sid": 5, "action": {"message": "x"}})
        with pytest.raises(openenv_gym.SessionNotFoundError, match="no session"):
            client.request({"op": "step", "sid": "nope", "action": {"message": "x"}})
        with pytest.raises(openenv_gym.InvalidRequestError, match="seed"):
            client.request({"op": "reset", "seed": -3})
        assert env.step({"message": "fine"})[0]["echo"] == "fine"
    finally:
        env.close()


def test_parse_address_rejects_other_forms() -> None:
    with pytest.raises(ValueError, match="unix:///path"):
        parse_address("http://127.0.0.1:1")


def test_hung_worker_is_replaced_by_the_next_reset(provider: str) -> None:
    env = gym.make("OpenEnv/Echo-v0", provider=provider, timeout=1.0).unwrapped
    try:
        env.reset(seed=0)
        _freeze(env)
        with pytest.raises(openenv_gym.WorkerTimeoutError):
            env.step({"message": "x"})
        # A step now would only wait out its timeout again behind the hung call: it says so.
        with pytest.raises(openenv_gym.ResetNeededError, match="timed out"):
            env.step({"message": "y"})
        obs, _ = env.reset(seed=0)  # replaces the hung worker instead of timing out again
        assert obs["echo"] == "" and env._worker.restarts == 1
        assert env.step({"message": "fresh"})[0]["echo"] == "fresh"
    finally:
        env.close()


def test_ctrl_c_mid_step_leaves_the_next_call_in_frame(provider: str) -> None:
    # Jupyter's interrupt lands while the reply is on its way: that reply must not be read as
    # the answer to the next request (it was, one step late, and reset then failed).
    env = gym.make("OpenEnv/Coding-v0", provider=provider)
    try:
        env.reset(seed=0)
        with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.3):
            env.step({"code": "import time; time.sleep(1.5); print('slow')"})
        assert env.step({"code": "print('next')"})[0]["stdout"] == "next\n"
        env.reset(seed=1)
        assert env.step({"code": "print('after reset')"})[0]["stdout"] == "after reset\n"
    finally:
        env.close()


def test_envs_dropped_without_close_stop_their_workers(provider: str) -> None:
    # A notebook cell run again rebinds `env` without close(): the old env's workers (or
    # containers) must go when it is collected, not when the kernel exits.
    # By identity, not by count: gc.collect() may also stop workers other tests of this
    # process left to the collector, which a count would take for ours.
    def mine() -> set[int | str]:
        if provider == "process":
            return set(workers_of(os.getpid()))
        from tests.security.helpers import docker_client, our_containers

        client = docker_client()
        try:
            return {c.id for c in our_containers(client, os.getpid())}
        finally:
            client.close()

    before = mine()
    env = gym.make("OpenEnv/Echo-v0", provider=provider)
    env.reset(seed=0)
    envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, envs_per_worker=1, provider=provider)
    envs.reset(seed=0)
    ours = mine() - before
    assert len(ours) == 3
    del env, envs
    gc.collect()
    assert not ours & mine()


def test_a_fork_of_the_trainer_that_ends_leaves_the_trainers_workers_serving(provider: str) -> None:
    # A forked child (a data loader, a callback that forks) inherits the envs; when it closes
    # its copy or ends normally (exit handlers run), the parent's workers and sessions stay.
    script = f"""
import os, sys
import gymnasium as gym, openenv_gym
env = gym.make("OpenEnv/Echo-v0", provider={provider!r})
env.reset(seed=0)
envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, provider={provider!r})
envs.reset(seed=0)
pid = os.fork()
if pid == 0:
    # The child let go of the parent's connections (its calls would connect anew).
    assert env.unwrapped._client._sock is None
    assert all(client._sock is None for client in envs.unwrapped.pool.clients)
    env.close()            # its copy only: the parent's session and worker stay
    sys.exit(0)            # a normal exit: atexit handlers run, with the copy of envs alive
assert os.waitpid(pid, 0)[1] == 0
print(env.step({{"message": "ab"}})[1], envs.step({{"message": ("a", "bc")}})[1].tolist())
env.close()
envs.close()
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split("\n")[-2] == "0.2 [0.1, 0.2]", out.stdout
