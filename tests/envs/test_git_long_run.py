"""Git-v0 over many envs in one worker: nothing kept per env once it is closed.

A worker hosts an env per session, and a training run opens a session per rollout
(``EnvPool.open``, the GRPO rollout): thousands of envs over one worker's life. What the
worker keeps for an env must go with it.
"""

from __future__ import annotations

from openenv_gym.envs.git.env import GitEnv
from openenv_gym.envs.git.workspace import shared

PUSH = "git fetch -q origin && git push -q origin HEAD:refs/heads/soak && echo pushed"


def test_the_git_servers_request_slots_keep_no_entry_per_closed_env() -> None:
    # The server counts requests in flight per env folder (at most 8 at once each); a count
    # back at 0 stayed in its table, one entry per env that ever fetched or pushed.
    slots = shared().server._httpd.RequestHandlerClass.slots
    for _ in range(30):
        env = GitEnv(task="create-branch")
        try:
            env.reset(seed=0)
            obs, *_ = env.step(env.parse_action({"command": PUSH}))
            assert "pushed" in obs.output, obs.output
        finally:
            env.close()
    assert len(slots._held) <= 1, f"{len(slots._held)} entries left for 30 closed envs"
