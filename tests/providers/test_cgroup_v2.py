"""Worker cgroups on a real cgroup v2 hierarchy.

Where /sys/fs/cgroup is v2, ``test_cgroup.py`` runs every test on it, limits included. A
hybrid machine (cgroup v1 for the controllers, as in CI) also mounts a v2 hierarchy at
/sys/fs/cgroup/unified, but without the pids and memory controllers, which v1 holds. These
tests run the v2 paths that need no controller there: ending every process with
``cgroup.kill``, a worker leaving its cgroup, and :func:`support` naming the controllers it
lacks. Skipped, with the reason, where no such hierarchy is writable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from openenv_gym.providers import _cgroup
from tests.security.helpers import wait_until

UNIFIED = "/sys/fs/cgroup/unified"


def _unified_without_controllers() -> str | None:
    """Why the tests cannot run here, or None."""
    try:
        with open(os.path.join(UNIFIED, "cgroup.controllers")) as f:
            controllers = f.read().split()
    except OSError:
        return f"no cgroup v2 hierarchy mounted at {UNIFIED} (not a hybrid machine)"
    if "pids" in controllers and "memory" in controllers:
        return f"{UNIFIED} has the controllers; test_cgroup.py covers such a hierarchy"
    if not os.access(UNIFIED, os.W_OK):
        return f"{UNIFIED} is not writable (run as root)"
    return None


SKIP = _unified_without_controllers()
pytestmark = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")


@pytest.fixture
def group():
    """A v2 cgroup of this test's, removed afterwards."""
    folder = os.path.join(UNIFIED, f"{_cgroup.PREFIX}{os.getpid()}-ptest-v2")
    os.makedirs(folder)
    made = _cgroup.WorkerCgroup("v2", {"pids": folder, "memory": folder})
    yield made
    made.kill(timeout=2)
    made.remove()


def test_support_names_the_controllers_a_v2_hierarchy_lacks(monkeypatch) -> None:
    monkeypatch.setattr(_cgroup, "_ROOT", UNIFIED)
    assert _cgroup._unified()
    ok, why = _cgroup.support()
    assert not ok
    assert "cgroup v2: no pids or memory controller at " + UNIFIED in why
    assert _cgroup.WorkerCgroup.create("ptest-none", pids=8, memory_bytes=None) is None
    assert not [e for e in os.listdir(UNIFIED) if e.startswith(f"{_cgroup.PREFIX}{os.getpid()}-")]


def test_cgroup_kill_ends_a_double_forked_daemon(group) -> None:
    folder = group.folders["pids"]
    assert os.path.exists(os.path.join(folder, "cgroup.kill"))  # v2's one-write kill is used
    # The shell starts a daemon (its parent exits at once, so nobody holds its pid) and waits.
    shell = subprocess.Popen(["sh", "-c", "read _; (sleep 600 &); exec sleep 600"],
                             stdin=subprocess.PIPE)
    try:
        group.add(shell.pid)
        shell.stdin.close()  # go: everything it starts from now on is in the cgroup
        assert wait_until(lambda: len(group.pids()) == 2, 10, 0.02), group.pids()
        daemon = next(pid for pid in group.pids() if pid != shell.pid)
        assert group.kill()
        assert shell.wait(timeout=5) < 0
        assert wait_until(lambda: not os.path.exists(f"/proc/{daemon}") or _cgroup._zombie(daemon), 10, 0.02)
        assert group.pids() == []
        group.remove()
        assert not os.path.exists(folder)
    finally:
        shell.kill()
        shell.wait()


def test_a_worker_leaves_its_v2_cgroup_and_removes_it(group) -> None:
    folder = group.folders["pids"]
    script = textwrap.dedent(f"""
        import os
        from openenv_gym.providers import _cgroup
        _cgroup._ROOT = {UNIFIED!r}
        with open(os.path.join({folder!r}, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        inside = open("/proc/self/cgroup").read()
        removed = _cgroup.leave()
        print(inside.count({os.path.basename(folder)!r}), removed, open("/proc/self/cgroup").read().count("openenv-gym-"))
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "True", "0"]  # was inside; left it; in none of ours now
    assert not os.path.exists(folder)
