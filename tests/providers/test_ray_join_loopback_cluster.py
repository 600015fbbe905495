"""A trainer joins a cluster that listens on loopback only, at ``address="127.0.0.1:PORT"``.

Such a cluster is what ``ray start --head`` makes with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
(as this package starts its own Ray). Ray replaces a loopback address with this machine's own
IP before it dials, and nothing listens there: the provider's probe of ``127.0.0.1:PORT``
passed, and ``ray.init`` then retried for many minutes (SIGTERM did not end it), where it
should have joined over loopback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

#: A trainer without the variable (a user's shell): argv[1] is the cluster's address.
TRAINER = """
import sys
import gymnasium as gym
import openenv_gym

env = gym.make("OpenEnv/Echo-v0", provider="ray",
               provider_options={"address": sys.argv[1], "num_cpus": 0.25})
env.reset(seed=0)
print("echo", env.step({"message": "hi"})[0]["echo"], flush=True)
env.close()
"""


def test_a_loopback_address_joins_a_cluster_that_listens_on_loopback_only() -> None:
    from ray.cluster_utils import Cluster

    assert os.environ.get(VAR) == "0"  # set by conftest: the cluster binds loopback only
    cluster = Cluster(initialize_head=True, shutdown_at_exit=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        assert cluster.address.startswith("127.0.0.1:"), cluster.address
        env = {k: v for k, v in os.environ.items() if k != VAR}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [
            str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")]))
        try:
            out = subprocess.run([sys.executable, "-c", TRAINER, cluster.address], env=env,
                                 capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"joining {cluster.address} hung: {str(exc.stderr)[-2000:]}")
        assert out.returncode == 0, out.stderr[-3000:]
        assert "echo hi" in out.stdout, out.stdout + out.stderr[-2000:]
    finally:
        cluster.shutdown()
