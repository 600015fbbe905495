"""Coding-v0 says when the kernel ended the code at its CPU-time limit.

RLIMIT_CPU counts the CPU of all the child's threads (Coding's is the step's timeout + 1 s), so
busy threads reach it well before the wall-clock deadline. The kernel's SIGKILL left
``exit_code -9``, ``timed_out`` False and an empty stderr: an agent could not tell it from a
crash. Now stderr ends with a note naming the limit; a timeout keeps its own report, and a
SIGKILL the code sent itself gets no note.

The code lowers its own limit to 1 s (the kernel allows lowering) and spins, so the kill comes
at a known CPU time whatever the machine's load, instead of racing the deadline with threads.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._exec import Limits, python_argv, run
from openenv_gym.envs.coding.grader import grade
from openenv_gym.envs.coding.humaneval import get_problem
from openenv_gym.envs.coding.sandbox import Sandbox

_SPIN = ("import resource, threading\n"
         "resource.setrlimit(resource.RLIMIT_CPU, (1, 1))\n"
         "def spin():\n"
         "    while True:\n"
         "        pass\n"
         "threading.Thread(target=spin, daemon=True).start()\n"
         "spin()\n")
_NOTE = "[killed: at the sandbox's CPU-time limit (1 s of CPU, all its threads together)]"


def test_a_cpu_limit_kill_is_named_and_a_timeout_or_own_sigkill_is_not(provider: str) -> None:
    env = gym.make("OpenEnv/Coding-v0", provider=provider, step_timeout=60.0)
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step({"code": _SPIN})
        assert obs["exit_code"] == -9 and not obs["timed_out"] and reward == 0.0
        assert obs["stderr"].endswith(_NOTE + "\n"), obs["stderr"][-500:]

        obs, *_ = env.step({"code": "import time; time.sleep(30)", "timeout": 1.0})
        assert obs["timed_out"] and obs["exit_code"] == -9 and "CPU-time" not in obs["stderr"]
        obs, *_ = env.step({"code": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"})
        assert obs["exit_code"] == -9 and not obs["timed_out"] and obs["stderr"] == ""
    finally:
        env.close()


def test_the_child_limit_is_named_with_its_value_and_merged_output_gets_it() -> None:
    # The limit the child was started with (python_argv's prelude), read off the exited child.
    limits = Limits(cpu_seconds=1, memory_bytes=None, file_size_bytes=None, processes=None, open_files=None)
    result = run(python_argv(limits, "while True:\n    pass\n"), timeout=60.0, merge_stderr=True)
    assert result.cpu_killed and not result.timed_out and result.exit_code == -9
    assert result.stdout.endswith(_NOTE + "\n") and result.stderr == ""
    result = run(python_argv(limits, "print('done')\n"), timeout=60.0)
    assert not result.cpu_killed and result.stdout == "done\n" and result.stderr == ""


@pytest.fixture
def box():
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


def test_a_candidate_killed_at_the_cpu_limit_is_named_in_its_failed_checks(box: Sandbox) -> None:
    problem = get_problem(0)
    program = _SPIN.replace("spin()\n", "") + problem.prompt + "    spin()\n"
    result, passed = grade(box, program, problem, timeout=30.0, per_check=20.0)
    assert not passed
    assert "was killed at the sandbox's CPU-time limit (all its threads together)" in result.stderr, result.stderr
