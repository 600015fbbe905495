"""A Ray the provider started from a thread lives until the process's ``atexit`` handlers ran.

The start is handed to a thread that lasts (Ray's parent-death signal is scoped to the
thread that started it). That thread was a ``ThreadPoolExecutor``'s, which the interpreter
joins at exit *before* the ``atexit`` handlers: Ray's GCS and raylet were killed first, and
the finalizer of an env never closed (and Ray's own shutdown) then waited a minute for the
GCS and ended the process with status 1 ("Failed to connect to GCS within 60 seconds").
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

ray = pytest.importorskip("ray")

SCRIPT = textwrap.dedent("""
    import atexit, os, threading
    import gymnasium as gym
    import openenv_gym

    def names(pid):
        out = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    stat = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
                    if int(stat[1]) == pid and stat[0] != "Z":
                        out[int(d)] = open(f"/proc/{d}/comm").read().strip()
                except OSError:
                    pass
        return out

    options = {"address": "local", "num_cpus": 0.5, "init_kwargs": {"num_cpus": 2}}
    made = []
    thread = threading.Thread(target=lambda: made.append(
        gym.make("OpenEnv/Echo-v0", provider="ray", provider_options=options)))
    thread.start()
    thread.join()
    env = made[0]
    env.reset(seed=0)
    assert env.step({"message": "x"})[0]["echo"] == "x"
    cores = {p for p, n in names(os.getpid()).items() if n in ("gcs_server", "raylet")}
    assert len(cores) == 2, cores

    @atexit.register  # runs before the env's finalizer and Ray's own shutdown (LIFO)
    def cores_still_run():
        print("CORES_AT_EXIT", len(set(names(os.getpid())) & cores), flush=True)
    # exits with the env still open
""")


def test_an_env_left_open_exits_cleanly_when_its_ray_was_started_from_a_thread() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300)
    assert "CORES_AT_EXIT 2" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Failed to connect to GCS" not in proc.stderr
