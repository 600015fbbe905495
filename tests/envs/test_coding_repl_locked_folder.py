"""A persistent interpreter that locked or moved its folder is restarted in it all the same.

The interpreter's children hold no capability (even as root), so after ``chmod 000 .`` (or
``runs/`` locked, or its folder renamed away) the next interpreter could not start in its
folder: every later cell of the episode raised ``EnvServerError`` (PermissionError,
FileNotFoundError) to the trainer, until a reset."""

from __future__ import annotations

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)

ENDINGS = {
    "locked": "import os; os.chmod('.', 0); os._exit(3)",
    "parent locked": "import os; os.chmod('..', 0); os._exit(3)",
    "moved away": "import os; os.rename(os.getcwd(), os.getcwd() + '-gone'); os._exit(3)",
    "a link in its place": ("import os; here = os.getcwd(); os.rename(here, here + '-gone'); "
                            "os.symlink('/usr', here); os._exit(3)"),
}


@pytest.mark.parametrize("ending", list(ENDINGS), ids=list(ENDINGS))
def test_the_next_cell_restarts_the_interpreter(ending: str) -> None:
    env = gym.make("OpenEnv/Coding-v0", provider="process", persistent=True)
    try:
        env.reset()
        obs, *_ = env.step({"code": ENDINGS[ending]})
        assert obs["exit_code"] == 3, obs
        obs, reward, *_ = env.step({"code": "import os; print(os.path.basename(os.getcwd()), os.listdir('.'))"})
        assert obs["stderr"] == "[interpreter restarted: earlier state is gone]\n", obs
        assert obs["stdout"].startswith("run-") and reward == 1.0, obs
        env.reset()
        obs, reward, *_ = env.step({"code": "print(1)"})
        assert obs["stdout"] == "1\n", obs
    finally:
        env.close()
