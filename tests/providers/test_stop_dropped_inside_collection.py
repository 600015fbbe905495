"""The garbage collector may run a dropped env's finalizer at any allocation of a thread, also
while that thread holds a lock that stopping the env's workers takes: inside
``ThreadPoolExecutor.submit`` (closing another env, SB3's or any library's pool), which holds a
lock every ``submit`` takes, or inside a call to the fork server (starting another env's
worker), whose exit statuses the stop asks it for. Either waited for the thread forever."""

from __future__ import annotations

import subprocess
import sys

# Run in a fresh interpreter: on failure it hangs holding Python's global executor lock,
# which a pytest process could then never take again (nor exit).
_SCRIPT = """
import concurrent.futures.thread, gc
import gymnasium as gym
import openenv_gym

envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, envs_per_worker=1, provider="process")
envs.reset(seed=0)
workers = list(envs.workers)
envs.cycle = envs  # freed by the collector, not by its reference count
del envs
# The state of a thread inside ThreadPoolExecutor.submit when the collector runs there.
with concurrent.futures.thread._global_shutdown_lock:
    gc.collect()
print("stopped" if not any(w.alive() for w in workers) else "running")
"""


def test_a_dropped_vector_env_collected_inside_a_thread_pool_submit_stops_its_workers() -> None:
    # The timeout only guards against the hang; a run takes a few seconds.
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["stopped"]


_SCRIPT_IN_FORK_SERVER_CALL = """
import gc, socket
import gymnasium as gym
import openenv_gym

envs = gym.make_vec("OpenEnv/Echo-v0", num_envs=2, envs_per_worker=1, provider="process")
envs.reset(seed=0)
workers = list(envs.workers)
envs.cycle = envs  # freed by the collector, not by its reference count
del envs
real_recv_fds = socket.recv_fds

def recv_fds_collecting(*args, **kwargs):
    socket.recv_fds = real_recv_fds
    gc.collect()  # as the collector may at any allocation of a fork server call
    return real_recv_fds(*args, **kwargs)

socket.recv_fds = recv_fds_collecting
other = gym.make("OpenEnv/Echo-v0", provider="process")  # its worker is forked by the server
other.reset(seed=0)
other.close()
print("stopped" if not any(w.alive() for w in workers) else "running")
"""


def test_a_dropped_vector_env_collected_inside_a_fork_server_call_stops_its_workers() -> None:
    out = subprocess.run([sys.executable, "-c", _SCRIPT_IN_FORK_SERVER_CALL], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["stopped"]
