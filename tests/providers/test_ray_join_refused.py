"""A cluster that answers but refuses this trainer says why, not "start it".

A cluster with token authentication (``ray start --head`` turns it on by default in Ray 2.60
once ``~/.ray/auth_token`` exists) refuses a driver that has no token: the provider said
"Failed to connect to Ray cluster at HOST:PORT; start it (`ray start --head`)" for a cluster
that runs, and dropped Ray's own reason (the token, and where Ray looks for one).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

#: A token-authenticated one-node cluster, shut down when its stdin closes.
HEAD = """
import sys
from ray.cluster_utils import Cluster

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
print(cluster.address, flush=True)
sys.stdin.read()
cluster.shutdown()
"""

#: A trainer without the token: argv[1] is the cluster's address.
TRAINER = """
import sys
import gymnasium as gym
import openenv_gym
from openenv_gym.errors import ProviderUnavailableError

try:
    gym.make("OpenEnv/Echo-v0", provider="ray", provider_options={"address": sys.argv[1]})
except ProviderUnavailableError as exc:
    print("refused:", exc, flush=True)
"""


def test_a_cluster_that_refuses_the_trainer_says_why(tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parents[2])
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    base.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", HOME=str(tmp_path),  # no ~/.ray/auth_token
                PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    head = subprocess.Popen([sys.executable, "-c", HEAD], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            env=dict(base, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32)))
    try:
        address = head.stdout.readline().strip()
        assert address, "the cluster did not start"
        out = subprocess.run([sys.executable, "-c", TRAINER, address], capture_output=True,
                             text=True, timeout=180, env=dict(base, RAY_AUTH_MODE="disabled"))
        assert out.returncode == 0, out.stderr[-3000:]
        assert "refused:" in out.stdout, out.stdout + out.stderr[-2000:]
        assert "Authentication token is missing or incorrect" in out.stdout, out.stdout
    finally:
        head.stdin.close()
        head.wait(timeout=60)
