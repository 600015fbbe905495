"""Coding-v0: an answer nested deeper than the packer sends is refused, not decoded.

Each tuple, set or complex is a msgpack extension whose payload ``unpack_plain`` decodes with
a nested ``msgpack.unpackb`` (~50 KB of C stack each). A completion can write its own frame on
the status pipe: a few hundred nested extensions (2 KB) overflowed the worker's stack, a
segfault that ended the worker and with it every other session it hosted (a vector env's
neighbour, every session of ``openenv-gym serve coding``).
"""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.coding.humaneval import get_problem

_DECODE_DEEP = """
import msgpack
from openenv_gym.envs.coding.runner import NotPlain, pack_plain, unpack_plain
data = msgpack.packb([])
for _ in range(3000):
    data = msgpack.packb([msgpack.ExtType(1, data)])
try:
    unpack_plain(data)
except NotPlain as exc:
    assert "nested more than" in str(exc), exc
    print("refused")
deepest = ()
for _ in range(99):
    deepest = (deepest,)
assert unpack_plain(pack_plain(["ok", deepest])) == ["ok", deepest]  # what the packer sends
"""


def test_an_answer_nested_too_deep_is_refused() -> None:
    # In a child of its own: before the fix the decoding killed the interpreter (SIGSEGV).
    out = subprocess.run([sys.executable, "-c", _DECODE_DEEP], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "refused", (out.returncode, out.stderr[-500:])


#: A completion that answers its first call with 3000 nested tuple extensions, written on the
#: status pipe itself (the runner's `status` descriptor, read from its frame).
_HOSTILE = '''
    import os, sys
    status = sys._getframe(1).f_locals["status"]
    def ext(code, data):
        return bytes([0xc9]) + len(data).to_bytes(4, "big") + bytes([code]) + data
    data = b"\\x90"
    for _ in range(3000):
        data = b"\\x91" + ext(1, data)
    frame = b"\\x92\\xa2ok" + data
    os.write(status, len(frame).to_bytes(8, "big") + frame)
    import time; time.sleep(5)
'''


def test_a_deeply_nested_answer_fails_its_own_checks_only() -> None:
    solution = get_problem(0).canonical_solution
    envs = gym.make_vec("OpenEnv/Coding-v0", num_envs=2, provider="process", envs_per_worker=2,
                        task="humaneval/0")
    try:
        envs.reset(seed=0)
        obs, rewards, _, truncated, infos = envs.step({"code": [_HOSTILE, solution]})
        assert "worker_restarted" not in infos, infos.get("worker_error")
        assert rewards.tolist() == [0.0, 1.0] and not np.any(truncated)
        assert "nested more than 100 levels deep" in obs["stderr"][0], obs["stderr"][0]
    finally:
        envs.close()
