"""``ray.shutdown()`` on another thread while a vector env restarts a killed Ray worker and
waits for the new actor's server: a typed ProviderUnavailableError, in bounded time.

A ``ray.get`` under way when the shutdown lands can block in Ray's C code for good (seen in
CI: more than 15 minutes, its timeout unheeded, out of reach of pytest's own timeout). So the
race runs in a child process under a hard outside timeout (a hang fails the test, it does not
hang the suite), and the child reports whether the waiting thread was inside Ray's get when
the shutdown began: the provider waits on Ray's reply callback instead, checking in short
slices that Ray is still up, so no thread of ours sits in Ray's get for a shutdown to wedge.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.security.helpers import cmdline, pids

ray = pytest.importorskip("ray")

#: The child: once the restart waits for the new actor's server, shut Ray down on another
#: thread; print where the waiting thread was then, and how the step ended.
SCRIPT = textwrap.dedent("""
    import os, signal, sys, threading, time
    import gymnasium as gym
    import openenv_gym
    from openenv_gym.errors import ProviderUnavailableError
    import ray

    options = {"address": "local", "num_cpus": 0.25,
               "init_kwargs": {"num_cpus": 2, "_temp_dir": sys.argv[1], "include_dashboard": False}}
    envs = gym.make_vec("OpenEnv/Echo-v0", 1, provider="ray", provider_options=options)
    envs.reset(seed=0)
    (worker,) = envs.workers
    killed, main = worker.actor, threading.get_ident()

    def stack():
        frame, names = sys._current_frames().get(main), []
        while frame is not None:
            names.append((os.path.basename(frame.f_code.co_filename), frame.f_code.co_name))
            frame = frame.f_back
        return names

    def waiting(names):
        # Blocked in a wait of the restart's placement (not still submitting the actor).
        return ("ray.py", "_place") in names and names[0][1] in ("get_objects", "wait")

    def shut_down_in_the_wait():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (worker.actor not in (None, killed)
                                                   and waiting(stack())):
            time.sleep(0.002)
        print("IN_RAY_GET", ("worker.py", "get_objects") in stack(), flush=True)
        ray.shutdown()

    threading.Thread(target=shut_down_in_the_wait, daemon=True).start()
    os.kill(worker.pid, signal.SIGKILL)
    try:
        envs.step(envs.action_space.sample())
        print("OUTCOME no error", flush=True)
    except ProviderUnavailableError as exc:
        print("OUTCOME typed:", exc, flush=True)
    except BaseException as exc:
        print("OUTCOME", type(exc).__name__, exc, flush=True)
    envs.close()
""")


def _kill_leftovers(temp_dir: Path) -> None:
    """End every process of the child's own Ray (they name its temp folder)."""
    mark = str(temp_dir).encode()
    for pid in pids():
        if any(mark in arg for arg in cmdline(pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_shutdown_while_a_restart_waits_is_a_typed_error_not_a_hang() -> None:
    # The child's Ray keeps its sockets and logs here: a short path (tmp_path's would make
    # its Unix socket paths longer than the system allows).
    temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, str(temp_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # its own session: the child, still running
        out, err = process.communicate()
        pytest.fail(f"the step hung after ray.shutdown() during a restart:\n{out}\n{err[-2000:]}")
    finally:
        _kill_leftovers(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert "IN_RAY_GET False" in out, (
        "the restart waited inside Ray's get when Ray was shut down, where Ray can block "
        f"for good:\n{out}\n{err[-2000:]}")
    assert "OUTCOME typed: Ray was shut down while worker 0" in out, (out, err[-2000:])
