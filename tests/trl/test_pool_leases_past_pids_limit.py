"""EnvPool leases past a worker's pids limit: the extra ones are refused, the worker lives on.

Each leased episode holds a connection, and each connection a thread of the worker, which
counts against the worker's ``pids_limit`` (its cgroup's on the process provider). Before,
the connection past the limit was dropped unanswered: the pool took it for a crashed
worker and restarted it, losing every other session on it, and connections could use the
whole budget up so that the env's own steps failed ("can't start new thread").
"""

from __future__ import annotations

import os

import pytest

from openenv_gym.providers import _cgroup
from openenv_gym.trl import EnvPool

pytestmark = pytest.mark.timeout(240)

PIDS_LIMIT = 32
LEASES = 32  # more connections than the limit allows threads


@pytest.fixture
def pool():
    ok, reason = _cgroup.support()
    if os.geteuid() != 0 or not ok:
        pytest.skip(f"the process provider gives workers no pids cgroup here ({reason})")
    with EnvPool("coding", num_workers=1, provider="process",
                 provider_options={"container_options": {"pids_limit": PIDS_LIMIT}}) as pool:
        yield pool


def test_leases_past_the_pids_limit_are_refused_without_restarting_the_worker(pool) -> None:
    episodes = pool.open(LEASES)
    outcomes = [episode.reset() for episode in episodes]
    refused = [i for i, o in enumerate(outcomes) if o.failure]
    taken = [i for i, o in enumerate(outcomes) if not o.failure]
    assert refused and taken
    for i in refused:
        assert outcomes[i].failure == "env_error"
        assert outcomes[i].message.startswith("SessionLimitError")
        assert "pids_limit" in outcomes[i].message
    assert pool.stats["crash"] == 0 and pool._generations == [0]

    # The sessions it took still step, all at once: connections leave the env room to run.
    stepped = pool.step_many([episodes[i] for i in taken], [{"code": "print(6 * 7)"}] * len(taken))
    assert [o.failure for o in stepped] == [None] * len(taken)
    assert {o.observations[-1]["stdout"] for o in stepped} == {"42\n"}

    # Once sessions are closed, a refused lane starts its episode on the same worker.
    pool.close_many([episodes[i] for i in taken])
    again = episodes[refused[0]].reset()
    assert again.failure is None, again.message
    assert episodes[refused[0]].step({"code": "print(1)"}).observations[-1]["stdout"] == "1\n"
    assert pool.stats["crash"] == 0 and pool._generations == [0]
    pool.close_many([episodes[i] for i in refused])
