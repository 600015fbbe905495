"""Fixtures of the security suite and its end-of-run report.

At the end of a run that collected these tests, pytest prints the tally (attacks tried,
faults injected, bad inputs tried, leaks found) and the table of outcomes. With
``OPENENV_GYM_SECURITY_TABLE=path.md`` the table is also written there as Markdown
(that is how the table in benchmarks/RESULTS.md is made).

Long soaks are opt-in: ``OPENENV_GYM_SOAK_SECONDS=600 python -m pytest tests/security``.
"""

from __future__ import annotations

import os

import pytest

from tests.security import helpers


@pytest.fixture(scope="session", autouse=True)
def _no_leaks_at_the_end():
    """After the whole suite: no container, worker process, socket file or cgroup of this process."""
    yield
    me = os.getpid()
    from openenv_gym.providers import _forks

    _forks.shutdown()  # what the trainer's exit does; it lives as long as the trainer otherwise
    left: list[str] = []
    left += [f"worker process {p}" for p in helpers.workers_of(me)]
    left += [f"fork server {p}" for p in helpers.fork_servers_of(me)]
    left += [f"socket file {s}" for s in helpers.owned_runtime_entries(me)]
    left += [f"cgroup {g}" for g in helpers.owned_cgroups(me)]
    if helpers.docker_engine_pid() is not None:
        try:
            client = helpers.docker_client()
            left += [f"container {c.name}" for c in helpers.our_containers(client, me)]
            client.close()
        except Exception:  # no engine: nothing of ours can be in one
            pass
    for item in left:
        helpers.leak(item)
    assert not left, f"the security suite left these behind: {left}"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    counts = helpers.COUNTS
    if not helpers.ROWS:
        return
    tr = terminalreporter
    tr.section("openenv_gym security suite")
    tr.write_line("attacks tried: {attacks}   faults injected: {faults}   bad inputs tried: "
                  "{bad_inputs}   leaks found: {leaks}   load/soak runs: {loads}".format(
                      **{k: counts.get(k, 0) for k in helpers.KINDS}))
    for kind, name, provider, expected, observed in helpers.ROWS:
        where = f" [{provider}]" if provider else ""
        tr.write_line(f"  {_KIND_NAMES[kind]:<9} {name}{where}: expected {expected}; observed {observed}")
    path = os.environ.get("OPENENV_GYM_SECURITY_TABLE")
    if path:
        with open(path, "w") as f:
            f.write(markdown_table())


_KIND_NAMES = {"attacks": "attack", "faults": "fault", "bad_inputs": "bad input", "leaks": "LEAK",
               "loads": "load"}


def markdown_table() -> str:
    """The tally and the outcome table as Markdown."""
    c = helpers.COUNTS
    lines = [f"Attacks tried: **{c.get('attacks', 0)}**, faults injected: **{c.get('faults', 0)}**, "
             f"bad inputs tried: **{c.get('bad_inputs', 0)}**, leaks found: **{c.get('leaks', 0)}**, "
             f"load/soak runs: **{c.get('loads', 0)}**.",
             "", "| kind | what | provider | expected | observed |", "|---|---|---|---|---|"]
    for kind, name, provider, expected, observed in helpers.ROWS:
        cells = [_KIND_NAMES[kind], name, provider or "-", expected, observed]
        lines.append("| " + " | ".join(s.replace("|", "\\|") for s in cells) + " |")
    return "\n".join(lines) + "\n"
