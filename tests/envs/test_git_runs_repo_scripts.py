"""A Git task's repository scripts run as ``./build.sh``, on both providers.

The sandboxes live under the worker's ``/tmp``; a ``noexec`` mount there refused every
program the agent wrote or checked out ("Permission denied", exit 126) while ``bash
build.sh`` worked, on Docker and on the process provider's private tmpfs (as root).
"""

from __future__ import annotations

import gymnasium as gym

import openenv_gym  # noqa: F401  (registers the ids)

SCRIPT = "printf '#!/bin/sh\\necho built \"$1\"\\n' > build.sh && chmod +x build.sh && ./build.sh now"


def test_a_script_in_the_workspace_runs_directly(provider: str) -> None:
    env = gym.make("OpenEnv/Git-v0", provider=provider, task=None)
    try:
        env.reset(seed=0)
        obs, *_ = env.step({"command": SCRIPT, "workdir": "."})
        assert (obs["exit_code"], obs["output"]) == (0, "built now\n"), obs["output"]
        # Still confined: the script writes nothing outside its env's folder.
        obs, *_ = env.step({"command": "./build.sh > /etc/openenv-gym-probe", "workdir": "."})
        assert obs["exit_code"] != 0
    finally:
        env.close()
