"""Users who run with warnings as errors (``python -X dev -W error``, pytest's
``filterwarnings = error``) see no warning of ours in the trainer's ordinary flows.

Each flow runs in a fresh interpreter in development mode with every warning an error: a
ResourceWarning raised in a finalizer cannot propagate, so Python prints it ("Exception
ignored in ...") and the test reads stderr for it. Real workers on each provider.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

#: What a warning of any kind leaves on stderr: raised ("...Warning: ..." in a traceback) or
#: printed from a finalizer ("Exception ignored in ...").
WARNING_MARKS = ("Warning:", "Exception ignored")
#: The checkout, the flows' current folder: they import the tests' own helpers.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_with_warnings_as_errors(code: str, provider: str) -> None:
    """Run ``code`` (``provider`` bound to the provider's name) under ``-X dev -W error``;
    fail on its error or on any warning it printed."""
    script = f"import gc\nimport gymnasium as gym\nimport openenv_gym\nprovider = {provider!r}\n"
    script += textwrap.dedent(code) + "\nprint('flow done')\n"
    out = subprocess.run([sys.executable, "-X", "dev", "-W", "error", "-c", script],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0 and "flow done" in out.stdout, out.stderr[-4000:]
    assert not any(mark in out.stderr for mark in WARNING_MARKS), out.stderr[-4000:]


def test_envs_dropped_without_close_warn_nothing(provider: str) -> None:
    # An env let go of unclosed (``del env``, a notebook cell run again, a collected cycle,
    # one still alive at interpreter exit) stops its worker through its finalizer; its
    # connections to the worker used to be left to the sockets' own finalizers, each
    # warning "unclosed <socket.socket ...>".
    run_with_warnings_as_errors("""
        env = gym.make("OpenEnv/Echo-v0", provider=provider)
        env.reset(seed=0)
        env.step({"message": "hello"})
        del env
        gc.collect()

        envs = gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider=provider,
                            envs_per_worker=2)
        envs.reset(seed=0)
        envs.step(envs.action_space.sample())
        envs.cycle = envs  # freed by the collector, not by its reference count
        del envs
        gc.collect()

        left = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider)
        left.reset(seed=0)  # still open when the interpreter exits
    """, provider)


def test_ordinary_flows_warn_nothing(provider: str) -> None:
    # make / reset / step / close, a vector env's autoreset in each mode, a worker killed
    # mid-episode, and Ctrl-C during a step: none warns, in the trainer or at its exit.
    run_with_warnings_as_errors("""
        import signal
        import threading

        from tests.vector.vector_helpers import kill_worker

        env = gym.make("OpenEnv/Gym-v0", env_id="CartPole-v1", provider=provider)
        env.reset(seed=0)
        for _ in range(300):
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
        kill_worker(env.unwrapped.worker)
        try:
            env.step(0)
        except openenv_gym.errors.WorkerError:
            pass
        assert env.reset()[1]["worker_restarted"]
        timer = threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
        timer.start()
        try:
            while True:
                if any(env.step(env.action_space.sample())[2:4]):
                    env.reset()
        except KeyboardInterrupt:
            pass
        timer.join()
        env.reset()
        env.step(0)
        env.close()

        for mode in ("next_step", "same_step", "disabled"):
            with gym.make_vec("OpenEnv/Gym-v0", num_envs=4, env_id="CartPole-v1", provider=provider,
                              autoreset_mode=mode, max_episode_steps=10) as envs:
                envs.reset(seed=0)
                for _ in range(25):
                    _, _, terminated, truncated, _ = envs.step(envs.action_space.sample())
                    if mode == "disabled" and (terminated | truncated).any():
                        envs.reset(options={"reset_mask": terminated | truncated})
        gc.collect()
    """, provider)
