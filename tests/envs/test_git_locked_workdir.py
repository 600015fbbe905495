"""A workdir the agent locked (``chmod 000`` of its repo) runs nothing and says so.

The command's child could not enter it (it holds no capability, even as root), and the
worker's ``PermissionError`` reached the trainer: every later step of the episode raised
``EnvServerError`` (a vector env's step, for every env), until a reset."""

from __future__ import annotations

import gymnasium as gym

import openenv_gym  # noqa: F401  (registers the ids)


def test_a_workdir_the_agent_locked_is_an_observation_and_can_be_unlocked() -> None:
    env = gym.make("OpenEnv/Git-v0", provider="process", task="commit-file")
    try:
        env.reset()
        obs, *_ = env.step({"command": "chmod 000 ."})  # the repo, the default workdir
        assert obs["exit_code"] == 0, obs
        obs, *_ = env.step({"command": "echo ran"})
        assert obs["exit_code"] == 1 and "ran" not in obs["output"], obs
        assert "workdir 'repo' cannot be entered: Permission denied (nothing was run)" in obs["output"], obs
        obs, *_ = env.step({"command": "chmod 700 repo", "workdir": "."})
        assert obs["exit_code"] == 0, obs
        obs, *_ = env.step({"command": "echo ran"})
        assert obs["output"] == "ran\n", obs
    finally:
        env.close()
