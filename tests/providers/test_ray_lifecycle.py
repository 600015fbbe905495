"""A Ray the provider starts itself is shut down with its last worker, leaving no process.

Runs without the shared cluster: the provider calls ``ray.init(address="local")`` here.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)

ray = pytest.importorskip("ray")


def test_local_ray_started_by_the_provider_is_gone_after_the_last_close(procs) -> None:
    if ray.is_initialized():
        ray.shutdown()
    before = procs.descendants(os.getpid())
    options = {"address": "local", "num_cpus": 0.5, "init_kwargs": {"num_cpus": 2}}
    first = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=options)
    second = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=options)
    try:
        assert ray.is_initialized()
        started = procs.descendants(os.getpid()) - before
        servers = {first.unwrapped.worker.pid, second.unwrapped.worker.pid}
        assert servers <= started  # the env servers run under the Ray we started
        first.reset(seed=0)
        second.reset(seed=0)
        first.close()
        # Ray stays up while another env still uses it.
        assert ray.is_initialized()
        assert second.step({"message": "still"})[0]["echo"] == "still"
    finally:
        first.close()
        second.close()
    assert not ray.is_initialized()
    leftover = procs.wait_gone(started, 20)
    assert not leftover, f"still running after close: {sorted(leftover)}"


def test_a_ray_started_from_a_thread_outlives_that_thread(procs) -> None:
    """The kernel ends a local Ray when the thread that started it ends (Ray arms a
    parent-death signal, which is scoped to the creating thread): an env made from a
    short-lived thread lost its workers, and Ray then ended the whole process."""
    import threading
    import time

    if ray.is_initialized():
        ray.shutdown()
    before = procs.descendants(os.getpid())
    options = {"address": "local", "num_cpus": 0.5, "init_kwargs": {"num_cpus": 2}}
    made: list = []
    thread = threading.Thread(target=lambda: made.append(
        gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=options)))
    thread.start()
    thread.join(120)
    (env,) = made
    try:
        started = procs.descendants(os.getpid()) - before
        cores = procs.ray_cores(started)
        assert len(cores) == 2, {pid: procs.name(pid) for pid in started}
        time.sleep(1)  # the kernel signals at the thread's end: give the kill time to land
        assert procs.running(cores) == cores
        env.reset(seed=0)
        assert env.step({"message": "after"})[0]["echo"] == "after"
    finally:
        env.close()
    assert not ray.is_initialized()
    assert not procs.wait_gone(started, 20)


def test_users_own_ray_is_left_running() -> None:
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"num_cpus": 0.5})
        env.reset(seed=0)
        env.close()
        assert ray.is_initialized()
        assert ray.get(ray.put(7)) == 7
    finally:
        ray.shutdown()


def _start_user_work(kind: str, folder: Path) -> Callable[[], int]:
    """Start a user's work of ``kind`` on the Ray now running and wait until it runs.

    Returns:
        A call that answers 1 from that work (a task is let finish first).
    """
    if kind == "task":
        @ray.remote(num_cpus=0)
        def wait_for_release(folder: str) -> int:
            open(os.path.join(folder, "started"), "w").close()
            while not os.path.exists(os.path.join(folder, "release")):
                time.sleep(0.05)
            return 1

        ref = wait_for_release.remote(str(folder))
        while not (folder / "started").exists():
            time.sleep(0.05)
        return lambda: ((folder / "release").touch(), ray.get(ref, timeout=60))[1]

    class Other:
        def ping(self) -> int:
            return 1

    if kind == "actor-named-ServerHost":  # the class name of the actors our workers run in
        Other.__name__ = Other.__qualname__ = "ServerHost"
    actor = ray.remote(num_cpus=1 if kind == "actor-holding-a-cpu" else 0)(Other).remote()
    assert ray.get(actor.ping.remote()) == 1
    return lambda: ray.get(actor.ping.remote())


@pytest.mark.parametrize("work", ["actor-holding-a-cpu", "actor-holding-no-resources",
                                  "actor-named-ServerHost", "task"])
def test_a_provider_started_ray_stays_up_while_other_work_holds_it(work: str,
                                                                   tmp_path: Path) -> None:
    # An RLlib algorithm built after the env uses the Ray the provider started: closing the
    # env must not shut it down under the algorithm. Nor under work with num_cpus=0 (Ray's
    # own Queue, RLlib's and Tune's coordinators; a user's task), which the resource counts
    # do not show, nor under a user's actor whose class shares the name of ours.
    if ray.is_initialized():
        ray.shutdown()
    options = {"address": "local", "num_cpus": 0.25, "init_kwargs": {"num_cpus": 2}}
    env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=options)
    try:
        answer = _start_user_work(work, tmp_path)
        env.close()
        assert ray.is_initialized() and answer() == 1
    finally:
        env.close()
        ray.shutdown()


def test_ray_shut_down_under_an_env_gives_typed_errors_and_starts_no_cluster() -> None:
    from openenv_gym.errors import ProviderUnavailableError, WorkerError

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"num_cpus": 0.5})
    try:
        env.reset(seed=0)
        ray.shutdown()  # a notebook cell, an RLlib teardown
        with pytest.raises(WorkerError):
            env.step({"message": "x"})
        with pytest.raises(ProviderUnavailableError, match="Ray was shut down"):
            env.reset(seed=1)
        assert not ray.is_initialized()  # no .remote() started a new local cluster
    finally:
        env.close()
    assert not ray.is_initialized()


def test_ray_shut_down_under_a_vector_env_says_so_at_its_reset() -> None:
    # As the single env: the restart has nowhere to start a worker (was a WorkerError
    # "restarting it failed too").
    from openenv_gym.errors import ProviderUnavailableError

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    envs = gym.make_vec("OpenEnv/Echo-v0", 2, provider="ray", provider_options={"num_cpus": 0.5})
    try:
        envs.reset(seed=0)
        ray.shutdown()
        with pytest.raises(ProviderUnavailableError, match="Ray was shut down"):
            envs.reset(seed=1)
        assert not ray.is_initialized()
    finally:
        envs.close()


def test_an_address_nothing_listens_on_is_refused_at_once() -> None:
    from openenv_gym.errors import ProviderUnavailableError

    if ray.is_initialized():
        ray.shutdown()
    for address in ("127.0.0.1:1", "ray://127.0.0.1:1"):
        with pytest.raises(ProviderUnavailableError, match="no Ray cluster answers"):
            gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"address": address})
    assert not ray.is_initialized()


#: A trainer that leaves the address to Ray's default (argv[1]: None or "auto").
_DEFAULT_ADDRESS_TRAINER = """
import sys
import gymnasium as gym
import openenv_gym
from openenv_gym.errors import ProviderUnavailableError

address = None if sys.argv[1] == "None" else sys.argv[1]
try:
    gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"address": address})
except ProviderUnavailableError as exc:
    print("refused:", exc, flush=True)
"""


@pytest.mark.parametrize("address", ["None", "auto"])
def test_a_ray_address_variable_nothing_listens_on_is_refused_at_once(address: str) -> None:
    # Ray's default address is RAY_ADDRESS when set: one nothing answers at (a shell's
    # leftover) made ray.init retry for minutes instead of being refused as a given one is.
    import subprocess
    import sys

    env = dict(os.environ, RAY_ADDRESS="127.0.0.1:1", PYTHONPATH=os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])))
    try:
        out = subprocess.run([sys.executable, "-c", _DEFAULT_ADDRESS_TRAINER, address], env=env,
                             capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("RAY_ADDRESS=127.0.0.1:1, where nothing listens, was not refused: Ray retried it")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "refused: no Ray cluster answers at '127.0.0.1:1' (RAY_ADDRESS)" in out.stdout, (
        out.stdout + out.stderr[-2000:])
    assert "unset RAY_ADDRESS" in out.stdout, out.stdout


#: Another driver's work on a cluster: a detached actor holding a CPU, left running as its
#: driver (argv[1]: the cluster's address) exits.
_OTHER_DRIVER = """
import sys, ray
ray.init(address=sys.argv[1], log_to_driver=False)
@ray.remote(num_cpus=1)
class Held:
    def ping(self):
        return 1
assert ray.get(Held.options(name="held", lifetime="detached").remote().ping.remote()) == 1
"""


def test_the_last_close_on_a_joined_cluster_disconnects_while_other_drivers_hold_cpus() -> None:
    # Disconnecting from a cluster we only joined ends this process's job alone: the CPUs that
    # other drivers' work holds kept this process connected (and warned that it left "the Ray
    # it started" running).
    import subprocess
    import sys

    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, shutdown_at_exit=True,
                      head_node_args={"num_cpus": 2, "include_dashboard": False})
    try:
        subprocess.run([sys.executable, "-c", _OTHER_DRIVER, cluster.address], check=True,
                       timeout=120, capture_output=True)
        options = {"address": cluster.address, "num_cpus": 0.25}
        env = gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=options)
        env.reset(seed=0)
        env.close()
        assert not ray.is_initialized()
    finally:
        ray.shutdown()
        cluster.shutdown()
