"""A broken plugin (an ``openenv_gym.envs`` entry point) costs a warning, never
``import openenv_gym`` or the CLI: a mistake in the EnvInfo its ``env_info()`` builds, or a
gym_id Gymnasium refuses, took every command down with it, ``doctor`` included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: The plugin module's body, per case: what its author got wrong.
PLUGINS = {
    "misspelled-argument": '''
def env_info():
    from openenv_gym.catalog import EnvInfo
    return EnvInfo(name="badplug", gym_id="OpenEnv/Badplug-v0", entry_point="badplug:X",
                   description="x", time_limit_kwargs="max_steps")  # time_limit_kwarg
''',
    "malformed-gym-id": '''
def env_info():
    from openenv_gym.catalog import EnvInfo
    return EnvInfo(name="badplug", gym_id="OpenEnv/Bad plug", entry_point="badplug:X",
                   description="x")
''',
    # Registration skipped the taken id without a word: gym.make made Gymnasium's CartPole.
    "gymnasium-id": '''
def env_info():
    from openenv_gym.catalog import EnvInfo
    return EnvInfo(name="badplug", gym_id="CartPole-v1", entry_point="badplug:X", description="x")
''',
}

#: What the warning says, per case.
WARNINGS = {
    "misspelled-argument": "plugin 'badplug' failed to load: TypeError: EnvInfo.__init__() got "
                           "an unexpected keyword argument 'time_limit_kwargs'",
    "malformed-gym-id": "plugin 'badplug': env 'badplug' is ignored: its gym_id 'OpenEnv/Bad plug' "
                        "is not a Gymnasium id",
    "gymnasium-id": "plugin 'badplug': env 'badplug' is ignored: its gym_id 'CartPole-v1' is already "
                    "registered with Gymnasium by gymnasium.envs.classic_control.cartpole:CartPoleEnv",
}


def _installed(tmp_path: Path, body: str) -> dict[str, str]:
    """An environment in which the plugin is installed (its dist-info on the path)."""
    info = tmp_path / "badplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: badplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[openenv_gym.envs]\nbadplug = badplug:env_info\n")
    (tmp_path / "badplug.py").write_text(body)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}


@pytest.mark.parametrize("case", list(PLUGINS))
def test_a_broken_plugin_is_a_warning_and_the_rest_works(tmp_path: Path, case: str) -> None:
    env = _installed(tmp_path, PLUGINS[case])
    run = subprocess.run(
        [sys.executable, "-c", "import gymnasium as gym, openenv_gym; "
         "print(sorted(i for i in gym.registry if i.startswith('OpenEnv/')))"],
        env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert WARNINGS[case] in run.stderr
    assert "'OpenEnv/Echo-v0'" in run.stdout and "Badplug" not in run.stdout
    listed = subprocess.run([sys.executable, "-m", "openenv_gym", "list"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "echo" in listed.stdout and "badplug" not in listed.stdout


@pytest.mark.parametrize("entry_point", ["openenv_gym.envs.echo.env:EchoEnvv", "openenv_gym.envs.echo.env"])
def test_an_entry_point_naming_no_class_of_its_module_is_a_typed_error_listing_its_classes(
        entry_point: str) -> None:
    # A misspelt class name (or no ':Class') raised a bare AttributeError, which killed the
    # worker during startup: the trainer saw an untyped "worker exited during startup".
    from openenv_gym.catalog import EnvInfo, load_env_class
    from openenv_gym.errors import InvalidRequestError

    info = EnvInfo("typo", "OpenEnv/Typo-v0", entry_point, "a misspelt entry point")
    with pytest.raises(InvalidRequestError, match=r"env 'typo': its entry point .* names no class of "
                       r"module 'openenv_gym.envs.echo.env' \(its Environment classes: EchoEnv\); fix entry_point"):
        load_env_class(info)
