"""Git-v0: a task's snapshot, built while another env of the worker runs a command, stays
out of that command's reach.

The git server serves a folder while a command of its owner runs, to whoever names it. The
builder of a task's snapshot (its trusted setup, which pushes to its own remotes) was
named after the task (``snapshot-<task key>``), which every agent can compute: another
session's command on the same worker (a served worker, a pool, tool mode) pushed into it
while a reset built it, and every later episode of the task on that worker started from
what it pushed: here, its one check passed before any step.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from openenv_gym.envs.git.env import GitEnv
from openenv_gym.envs.git.models import GitAction
from openenv_gym.envs.git.tasks import load_tasks
from tests.security.helpers import wait_until

#: A task whose setup pushes a branch, then takes long enough (its own work, here a sleep)
#: that a command looping over pushes meets it: the branch's removal is the task.
_SLOW_TASK = """
[[task]]
name = "slow-setup"
category = "remotes"
instruction = "Delete the branch `old` on origin."
setup = ['''
new_repo
commit a.txt 'a' 'Initial commit'
git push -q origin main main:old
sleep 3
''']
solution = ["git push -q origin --delete old"]
checks = [{ type = "remote_lacks_ref", ref = "refs/heads/old" }]
"""


def test_another_envs_command_cannot_push_into_a_snapshot_being_built(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(_SLOW_TASK)
    key = load_tasks(str(tasks))["slow-setup"].key
    # Two envs of one process: two sessions of one worker.
    attacker = GitEnv(task=None, tasks_file=str(tasks))
    victim = GitEnv(task=None, tasks_file=str(tasks))
    try:
        attacker.reset()
        victim.reset()
        # Until the test says stop: delete the branch in the snapshot's origin, by its name.
        command = ('git init -q a && cd a && touch "$TMPDIR/started"; base=${REMOTE%/*/remotes}; '
                   'while [ ! -e "$TMPDIR/stop" ]; do '
                   f'git push -q "$base/snapshot-{key}/remotes/origin.git" :refs/heads/old 2>/dev/null '
                   '&& { echo pushed; break; }; done; echo done')
        results = []
        thread = threading.Thread(target=lambda: results.append(
            attacker.step(GitAction(command=command, timeout=60.0))))
        thread.start()
        try:
            started = os.path.join(attacker.workspace.tmp, "started")
            assert wait_until(lambda: os.path.exists(started), 30.0, 0.02), "the command never started"
            obs, info = victim.reset(options={"task": "slow-setup"})  # builds the snapshot now
        finally:
            Path(attacker.workspace.tmp, "stop").touch()
            thread.join()
        output = results[0][0].output
        assert "done" in output and "pushed" not in output, output
        assert obs.checks_passed == 0 and info["score"] == 0.0, "the episode started solved"
        later = GitEnv(task="slow-setup", tasks_file=str(tasks))
        try:
            obs, _ = later.reset()
            assert obs.checks_passed == 0, "a later episode started from what the command pushed"
        finally:
            later.close()
    finally:
        attacker.close()
        victim.close()
