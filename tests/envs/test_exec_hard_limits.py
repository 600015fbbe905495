"""A Python child's limits are hard limits: its code cannot raise them back.

The prelude of :func:`~openenv_gym.envs._exec.python_argv` (Coding-v0's steps, REPL and
graded programs) lowered only the soft limit where the inherited hard limit was finite, as
RLIMIT_NOFILE's and RLIMIT_NPROC's usually are: a step raised its open files from 256 to the
hard 20000 and its process budget to the user's whole hard RLIMIT_NPROC, the only fork bound
of a worker without a cgroup. (bash's ``ulimit``, Git-v0's, sets both.)"""

from __future__ import annotations

import resource
import subprocess

import gymnasium as gym

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._exec import Limits, python_argv

RAISE = """
import resource
for name in ("RLIMIT_NOFILE", "RLIMIT_NPROC"):
    which = getattr(resource, name)
    soft, hard = resource.getrlimit(which)
    try:
        resource.setrlimit(which, (hard, hard))
    except (ValueError, OSError):
        pass
    print(name, *resource.getrlimit(which))
"""


def _finite_hard_limits() -> None:
    """In the child, before it runs: finite hard limits above the ones it is given."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 4096))
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)
    if nproc[1] == resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_NPROC, (min(nproc[0], 1 << 20), 1 << 20))


def test_a_python_child_cannot_raise_its_limits_to_inherited_finite_hard_ones() -> None:
    limits = Limits(cpu_seconds=None, memory_bytes=None, file_size_bytes=None, processes=64, open_files=64)
    argv = python_argv(limits, RAISE)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, preexec_fn=_finite_hard_limits)
    got = {line.split()[0]: tuple(map(int, line.split()[1:])) for line in out.stdout.splitlines()}
    assert got["RLIMIT_NOFILE"] == (64, 64), out
    budget = limits.resolved()["processes"]  # the user's tasks now, plus 64
    assert got["RLIMIT_NPROC"][1] <= budget + 1024, out  # the user's tasks may grow meanwhile
    assert got["RLIMIT_NPROC"][0] == got["RLIMIT_NPROC"][1], out


def test_a_coding_step_cannot_raise_its_open_files_limit() -> None:
    env = gym.make("OpenEnv/Coding-v0", provider="process", limits={"open_files": 64})
    try:
        env.reset()
        obs, *_ = env.step({"code": RAISE})
    finally:
        env.close()
    got = {line.split()[0]: tuple(map(int, line.split()[1:])) for line in obs["stdout"].splitlines()}
    assert got["RLIMIT_NOFILE"] == (64, 64), obs
