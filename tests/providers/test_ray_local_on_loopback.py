"""A Ray that the provider starts itself listens on 127.0.0.1 only, as every server of this
package does. Since importing the provider no longer sets RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
(f088bca), Ray on Linux bound its GCS, raylet, workers and agents to all interfaces, with no
authentication: anyone who reaches the machine could join the cluster and run code."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("ray")

VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

CODE = """
import ipaddress, os, ray
from openenv_gym.providers.ray import RayProvider

def descendants(root):
    # This process and every process below it (Ray's GCS, raylet, agents and workers).
    parent = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            pass
    found, todo = {root}, [root]
    while todo:
        p = todo.pop()
        for child, ppid in parent.items():
            if ppid == p and child not in found:
                found.add(child)
                todo.append(child)
    return found

def listening_off_loopback(pids):
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            pass
    bad = []
    for table, size in (("tcp", 4), ("tcp6", 16)):
        with open(f"/proc/net/{table}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                    continue
                addr, port = fields[1].split(":")
                raw = bytes.fromhex(addr)
                # The kernel prints each 32-bit word in host (little-endian) order.
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, size, 4))
                ip = ipaddress.ip_address(raw)
                ip = getattr(ip, "ipv4_mapped", None) or ip
                if not ip.is_loopback:
                    bad.append((str(ip), int(port, 16)))
    return bad

provider = RayProvider(address="local", init_kwargs={"num_cpus": 1})
[worker] = provider.start("echo", 1)
try:
    bad = listening_off_loopback(descendants(os.getpid()))
    assert not bad, bad
    assert VAR not in os.environ, "os.environ is left as it was"
finally:
    provider.stop_all([worker])
    ray.shutdown()
""".replace("VAR", repr(VAR))


@pytest.mark.skipif(sys.platform != "linux", reason="Ray binds loopback by itself elsewhere")
def test_a_ray_the_provider_starts_listens_on_loopback_only() -> None:
    env = {k: v for k, v in os.environ.items() if k != VAR}
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
