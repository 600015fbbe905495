"""The garbage collector may run a dropped env's finalizer at any allocation of a thread, also
while that thread is inside ``ThreadPoolExecutor.submit`` (closing another env, SB3's or any
library's pool), which holds a lock every ``submit`` takes. Stopping the dropped env's workers
there must not need that lock: a thread pool of its own waited for the thread forever."""

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
