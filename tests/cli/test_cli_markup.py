"""CLI messages are plain text: an install command's ``[extra]`` survives rich's markup.

Without escaping, rich reads ``'openenv-gym[docker]'`` as a style tag and prints
``pip install 'openenv-gym'`` -- a command that installs nothing the user is missing.
"""

from __future__ import annotations

import argparse

import pytest

from openenv_gym.catalog import EnvInfo


def test_error_keeps_the_extra_of_an_install_command(capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_gym.cli._ui import error

    error("provider 'docker' needs an extra: pip install 'openenv-gym[docker]'",
          "pip install 'openenv-gym[ray]'")
    err = capsys.readouterr().err
    assert "pip install 'openenv-gym[docker]'" in err
    assert "pip install 'openenv-gym[ray]'" in err


def test_list_names_the_extra_of_an_env_no_provider_can_run(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_gym.cli import envs

    info = EnvInfo("atari", "OpenEnv/Atari-v0", "openenv_gym.envs.atari.env:AtariEnv",
                   "Atari games", modules=("no_such_module_for_this_test",), extra="atari")
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(envs, "all_envs", lambda: (info,))
    monkeypatch.setattr(envs, "runnable_providers", lambda _info: [])
    assert envs._list(argparse.Namespace()) == 0
    assert "pip install 'openenv-gym[atari]'" in capsys.readouterr().out


def test_doctor_table_names_the_extra_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_gym.cli import doctor

    check = doctor.Check("package ale-py", "warn", "not installed", "pip install 'openenv-gym[atari]'")
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(doctor, "run_checks", lambda port=8000: [check])
    doctor._doctor(argparse.Namespace(json=False, port=8000))
    assert "pip install 'openenv-gym[atari]'" in capsys.readouterr().out


def test_text_that_reads_as_an_emoji_code_is_printed_as_it_is() -> None:
    # A name the user typed, or a failed build's Dockerfile line ("openenv:x:10001:...") came
    # out with rich's emoji in place of ":x:" and ":smile:": "no pool named 'a❌b'".
    from tests.cli.cli_helpers import run

    out = run("logs", "a:x:b:smile:c")
    assert out.returncode != 0
    assert "'a:x:b:smile:c'" in out.stderr, out.stderr
