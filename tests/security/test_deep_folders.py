"""Folders nested deeper than Python's recursion: a hostile step must not break its env."""

from __future__ import annotations

import textwrap

import gymnasium as gym

import openenv_gym  # noqa: F401  (registers the ids)
from tests.security import helpers
from tests.security.helpers import record

#: Deeper than ``shutil.rmtree`` (a frame per level) goes under Python's default recursion limit
#: (1000; the worker keeps it): ``mkdir d; cd d`` in a loop. Fixed: the suite raises the limit.
DEPTH = 1500

NEST = textwrap.dedent(f"""
    import os
    for _ in range({DEPTH}):
        os.mkdir("d")
        os.chdir("d")
    print("nested")
""")


def test_a_coding_step_that_nests_folders_too_deep_for_rmtree_leaves_the_env_working() -> None:
    """The sandbox is emptied after every step and at every reset with ``shutil.rmtree``,
    which recurses a frame per level: a step that nested folders deeper failed with
    RecursionError, and so did every later step and reset of the env (and its close)."""
    env = gym.make("OpenEnv/Coding-v0", provider="process", step_timeout=20.0)
    try:
        env.reset()
        base = helpers.sandbox_base(env)
        obs, reward, *_ = env.step({"code": NEST})
        assert obs["stdout"] == "nested\n" and reward == 1.0, obs
        obs, *_ = env.step({"code": "import os; print(os.listdir('..'))"})
        assert obs["stdout"].startswith("['run-"), obs  # nothing of the last step is left
        env.reset()
        obs, reward, *_ = env.step({"code": "print(2 + 2)"})
        assert obs["stdout"] == "4\n" and reward == 1.0, obs
        assert not helpers.processes_with_home_under(base)
    finally:
        env.close()
    record("attacks", f"folders nested {DEPTH} deep (deeper than shutil.rmtree recurses)",
           "the sandbox is emptied all the same; the env keeps working",
           "step observed, next step and reset OK", "process")
