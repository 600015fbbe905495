"""The garbage collector may run a dropped env's finalizer at any allocation of a thread, also
while that thread holds a lock that stopping the env's workers takes: inside
``ThreadPoolExecutor.submit`` (closing another env, SB3's or any library's pool), which holds a
lock every ``submit`` takes, or inside a call to the fork server (starting another env's
worker), whose exit statuses the stop asks it for. Either waited for the thread forever."""

from __future__ import annotations

import subprocess
import sys

#: A vector env dropped in a reference cycle (freed by the collector, not by its reference
#: count), its workers kept to check; each test's script then has the collector run inside a lock.
_DROPPED = """
import gc
import gymnasium as gym
import openenv_gym

envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, envs_per_worker=1, provider="process")
envs.reset(seed=0)
workers = list(envs.workers)
envs.cycle = envs
del envs
"""
_REPORT = """
print("stopped" if not any(w.alive() for w in workers) else "running")
"""


def _workers_stopped(script: str) -> None:
    # Run in a fresh interpreter: on failure it hangs holding a lock (Python's global executor
    # lock) that a pytest process could then never take again (nor exit). The timeout only
    # guards against the hang; a run takes a few seconds.
    out = subprocess.run([sys.executable, "-c", _DROPPED + script + _REPORT], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["stopped"]


def test_a_dropped_vector_env_collected_inside_a_thread_pool_submit_stops_its_workers() -> None:
    # The state of a thread inside ThreadPoolExecutor.submit when the collector runs there.
    _workers_stopped("""
import concurrent.futures.thread
with concurrent.futures.thread._global_shutdown_lock:
    gc.collect()
""")


_IN_FORK_SERVER_CALL = """
import socket
real_recv_fds = socket.recv_fds

def recv_fds_collecting(*args, **kwargs):
    socket.recv_fds = real_recv_fds
    gc.collect()  # as the collector may at any allocation of a fork server call
    return real_recv_fds(*args, **kwargs)

socket.recv_fds = recv_fds_collecting
other = gym.make("OpenEnv/Echo-v0", provider="process")  # its worker is forked by the server
other.reset(seed=0)
other.close()
"""


def test_a_dropped_vector_env_collected_inside_a_fork_server_call_stops_its_workers() -> None:
    _workers_stopped(_IN_FORK_SERVER_CALL)
