"""A confined step must not hold memory past its address-space limit in memory files.

What a child writes to a ``memfd`` is shmem that RLIMIT_AS (Coding's ``memory_mb``) does not
count while it is not mapped: a step held to 256 MiB kept 640 MiB in memfds, and each
process of its budget could keep 256 descriptors of 16 MiB. ``memfd_create`` and
``memfd_secret`` are now refused (seccomp), as System V shared memory is.
"""

from __future__ import annotations

import os
import textwrap

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._confine import abi as landlock_abi
from tests.security.helpers import key_values, one_coding_step, record

pytestmark = pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64") or landlock_abi() < 1,
                                reason="the seccomp filter has numbers for x86-64 and arm64; needs Landlock")


def test_a_step_cannot_hold_memory_in_memfds_past_its_limit() -> None:
    code = textwrap.dedent("""
        import os
        held = 0
        try:
            for _ in range(24):  # 384 MiB, past the 256 MiB limit
                fd = os.memfd_create("hoard")
                for _ in range(16):
                    os.write(fd, b"x" * (1 << 20))
                held += 16
            print("memfd=ok")
        except OSError as exc:
            print("memfd=" + str(exc.strerror))
        print("held=" + str(held))
    """)
    obs = one_coding_step(code, step_timeout=20.0, memory_mb=256)
    got = key_values(obs["stdout"])
    assert got == {"memfd": "Operation not permitted", "held": "0"}, obs
    record("attacks", "memfds past the address-space limit (RLIMIT_AS does not count them)",
           "memfd_create refused (seccomp)", f"memfd={got['memfd']}; held {got['held']} MiB", "process")
