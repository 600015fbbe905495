"""Ctrl-C in a live interpreter (Jupyter) must not leave it unable to run envs: neither during
the first ``import docker`` or ``import ray`` (half-imported modules) nor during a worker's
stop (the at-exit list keeping a worker that is gone)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.providers import base
from openenv_gym.providers.process import ProcessProvider
from tests.conftest import ctrl_c_after, require_docker
from tests.providers.ignore_term_env import ENV_ID as IGNORE_TERM

# A real SIGINT, raised when the provider's first import reaches TRIGGER: what a Ctrl-C pressed
# then does, without depending on when it lands. Then, in the same interpreter, an env must run.
_CHILD = textwrap.dedent("""
    import importlib.abc, signal, sys
    import gymnasium as gym, openenv_gym

    PROVIDER, TRIGGER = sys.argv[1:3]
    assert TRIGGER not in sys.modules, f"{TRIGGER} was imported before the provider's import"

    class CtrlCAt(importlib.abc.MetaPathFinder):
        fired = False

        def find_spec(self, name, path=None, target=None):
            if name == TRIGGER and not self.fired:
                self.fired = True
                signal.raise_signal(signal.SIGINT)  # its handler runs inside the import
            return None

    sys.meta_path.insert(0, CtrlCAt())
    try:
        gym.make("OpenEnv/Echo-v0", provider=PROVIDER).close()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    env = gym.make("OpenEnv/Echo-v0", provider=PROVIDER)
    try:
        env.reset(seed=0)
        env.step(env.action_space.sample())
    finally:
        env.close()
    print("stepped", flush=True)
""")


@pytest.mark.parametrize(("provider", "trigger"), [
    # after urllib3._collections: "module 'urllib3' has no attribute '_collections'"
    pytest.param("docker", "urllib3.connectionpool", marks=pytest.mark.docker),
    # after docker.errors: "module 'docker' has no attribute 'errors'"
    pytest.param("docker", "docker.constants", marks=pytest.mark.docker),
    # "partially initialized module 'ray' has no attribute '_private'"
    pytest.param("ray", "ray.util.placement_group"),
])
def test_ctrl_c_during_a_providers_first_import_leaves_the_interpreter_usable(
        provider: str, trigger: str, tmp_path: Path) -> None:
    if provider == "docker":
        require_docker()
    else:
        pytest.importorskip("ray")
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    done = subprocess.run([sys.executable, str(script), provider, trigger], capture_output=True,
                          text=True, timeout=240, cwd=Path(__file__).resolve().parents[2])
    assert "interrupted" in done.stdout, f"the Ctrl-C did not land in the import: {done.stderr[-2000:]}"
    assert done.returncode == 0 and "stepped" in done.stdout, (
        f"after a Ctrl-C during `import {provider}`, the next env failed:\n{done.stderr[-2000:]}")


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_an_interrupted_stop_drops_the_killed_worker_from_the_at_exit_list(
        fork: bool, tmp_path: Path) -> None:
    noted = tmp_path / "sigterm"
    provider = ProcessProvider(fork=fork)
    [worker] = provider.start("gym", 1, {"env_id": f"tests.providers.ignore_term_env:{IGNORE_TERM}",
                                         "noted": str(noted)})
    try:
        assert worker in base._live
        # Ctrl-C once the SIGTERM arrived: inside the grace the stop waits (2 s) for this
        # worker, which ignores it; terminate() then SIGKILLs it.
        with pytest.raises(KeyboardInterrupt), \
                ctrl_c_after(0.0, when=lambda: noted.exists() and noted.read_text().strip() != ""):
            worker.stop()
        assert not worker.alive()
        assert worker not in base._live, "a worker an interrupted stop killed stays in the at-exit list"
    finally:
        worker.stop()
