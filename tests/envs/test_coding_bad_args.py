"""Coding-v0's constructor refuses values that would silently change what it scores or how
it confines (tests/envs/)."""

from __future__ import annotations

import pytest

from openenv_gym.envs._exec import Limits


@pytest.mark.parametrize("kwargs, named", [
    ({"per_check_timeout": -1}, "per_check_timeout"),       # every check failed: reward 0
    ({"per_check_timeout": float("nan")}, "per_check_timeout"),
    ({"max_attempts": float("nan")}, "max_attempts"),        # never terminated
    ({"max_attempts": 2.5}, "max_attempts"),
    ({"max_attempts": "2"}, "max_attempts"),                 # was a bare TypeError
    ({"show_failed_checks": "False"}, "show_failed_checks"),  # bool("False"): the answers shown
    ({"persistent": "no"}, "persistent"),
    ({"memory_mb": -1}, "memory_mb"),                        # lifted the memory limit
    ({"memory_mb": 1.5}, "memory_mb"),
    ({"memory_mb": 2**70}, "memory_bytes"),                  # every step failed
    ({"limits": {"open_files": "64"}}, "open_files"),        # every step failed
    ({"limits": {"memory_bytes": -5}}, "memory_bytes"),
    ({"limits": [1]}, "limits"),
    ({"output_limit": 1.5}, "output_limit"),                 # every step failed
    ({"task": 5}, "task"),                                   # was AttributeError 'partition'
    ({"max_timeout": float("inf")}, "max_timeout"),
    ({"reward_fn": "no_such_module_xyz:f"}, "reward_fn"),    # said: pip install '[coding]'
])
def test_coding_refuses_at_construction(kwargs, named) -> None:
    from openenv_gym.envs.coding.env import CodingEnv

    with pytest.raises(ValueError, match=named):
        CodingEnv(**kwargs)


def test_limits_keep_none_and_whole_numbers() -> None:
    limits = Limits.merged({"open_files": 64, "processes": None}, memory_bytes=1 << 30)
    assert limits.open_files == 64 and limits.processes is None and limits.memory_bytes == 1 << 30
    with pytest.raises(ValueError, match="cpu_seconds"):
        Limits.merged({"cpu_seconds": 1.5})


def test_git_refuses_bad_limits_at_construction() -> None:
    from openenv_gym.envs.git.env import GitEnv

    with pytest.raises(ValueError, match="processes"):
        GitEnv(limits={"processes": "x"})
    with pytest.raises(ValueError, match="task"):
        GitEnv(task=["create-branch"])
