"""Ctrl-C (Jupyter's interrupt, a real SIGINT) while envs start leaves nothing this process
started running, in a process that lives on:

- the first start's fork server, interrupted before it served, ends with its sentinel (the
  sentinel waited for the notebook to exit: one more process per interrupted start);
- a second Ctrl-C while an interrupted ``make_vec`` waits for the starts in flight still
  stops their workers once they serve (they served on, unowned, until the notebook exited).
"""

from __future__ import annotations

import os
import sys
import threading

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from tests.conftest import ctrl_c_after
from tests.providers.gated_start_env import ENV_ID as GATED_ENV_ID
from tests.security.helpers import fork_servers_of, sentinels_of, wait_until, workers_of

GATED_GYM_ID = f"tests.providers.gated_start_env:{GATED_ENV_ID}"


def test_ctrl_c_while_the_fork_server_starts_leaves_no_sentinel(monkeypatch: pytest.MonkeyPatch) -> None:
    me = os.getpid()
    for attempt in range(5):
        # A server of its own each time: a new environment needs a new fork server.
        monkeypatch.setenv("OPENENV_GYM_TEST_FORK_SERVER", f"interrupted-sentinel-{attempt}")
        servers, sentinels = fork_servers_of(me), sentinels_of(me)

        def importing() -> bool:
            # Its sentinel is started before the server imports the worker code (a tenth of
            # a second or more), and before it says hello: the interrupt lands in that wait.
            return bool(sentinels_of(me) - sentinels)

        with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.0, when=importing):
            gym.make("OpenEnv/Echo-v0", provider="process").close()
        if wait_until(lambda: not fork_servers_of(me) - servers, 10):
            break  # the start was cut short while the server started (else it serves: again)
    else:
        pytest.skip("the interrupt never landed while the fork server started")
    assert wait_until(lambda: not sentinels_of(me) - sentinels, 15), \
        "the sentinel of the interrupted fork server waits for this process to exit"
    with gym.make("OpenEnv/Echo-v0", provider="process") as env:  # a new one serves
        env.reset(seed=0)
        assert env.step({"message": "ok"})[0]["echo"] == "ok"


def _waiting_for_starts_in_flight(main: int) -> bool:
    """Whether the main thread, interrupted in the fan-out of ``Provider._start_all``
    (``run_together``), waits there (for the starts in flight to end) rather than for the
    starts' results."""
    frame = sys._current_frames().get(main)
    callee = None
    while frame is not None:
        if frame.f_code.co_name == "run_together" and callee in ("wait", "join"):
            return True
        callee, frame = frame.f_code.co_name, frame.f_back
    return False


def test_second_ctrl_c_while_an_interrupted_start_waits_still_stops_its_workers(tmp_path) -> None:
    me = os.getpid()
    gate = tmp_path / "gate"
    before = workers_of(me)
    main = threading.main_thread().ident
    starting = lambda: len(workers_of(me) - before) == 2  # noqa: E731  (both run their env's constructor)
    with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.0, when=starting):
        # The first Ctrl-C lands while both workers start, the second once the interrupted
        # start waits for them; then they serve.
        with ctrl_c_after(0.0, when=lambda: _waiting_for_starts_in_flight(main)):
            try:
                gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=GATED_GYM_ID, gate_file=str(gate),
                             provider="process", envs_per_worker=1)
            finally:
                gate.touch()
    assert wait_until(lambda: not workers_of(me) - before, 30), "workers started by the interrupted make_vec serve on"
    with gym.make_vec("OpenEnv/Gym-v0", num_envs=2, env_id=GATED_GYM_ID, gate_file=str(gate),
                      provider="process", envs_per_worker=1) as envs:
        envs.reset(seed=0)
    assert wait_until(lambda: not workers_of(me) - before, 10)


def _docker_ready() -> bool:
    from openenv_gym.providers.docker import DockerProvider

    return DockerProvider.available()[0]


def _my_containers(client: object, **filters: str) -> list[dict]:
    label = f"openenv-gym.owner-pid={os.getpid()}"
    return client.api.containers(all=True, filters={"label": label, **filters})  # type: ignore[attr-defined]


@pytest.mark.skipif(not _docker_ready(), reason="no Docker engine answers here")
def test_ctrl_c_while_the_engine_creates_the_container_removes_it() -> None:
    import docker

    client = docker.from_env()
    gym.make("OpenEnv/Echo-v0", provider="docker").close()  # the image is built: creates come at once
    before = {c["Id"] for c in _my_containers(client)}
    created = lambda: any(c["Id"] not in before for c in _my_containers(client, status="created"))  # noqa: E731
    for _ in range(10):
        with pytest.raises(KeyboardInterrupt) as kept, ctrl_c_after(0.0, when=created):
            gym.make("OpenEnv/Echo-v0", provider="docker").close()
        # Landed inside docker-py's create (the engine made it, the worker never heard back)?
        if any(entry.name == "create" and "docker" in str(entry.path) for entry in kept.traceback):
            break
    else:
        pytest.skip("the interrupt never landed while the engine created the container")
    assert wait_until(lambda: {c["Id"] for c in _my_containers(client)} <= before, 15), \
        "the container created when Ctrl-C came is left"
    with gym.make("OpenEnv/Echo-v0", provider="docker") as env:
        env.reset(seed=0)
    client.close()
