"""The runtime folder and its orphan sweep, with several owners on one machine: other PID
namespaces sharing /tmp, other users, links where a pool folder should be."""

from __future__ import annotations

import json
import os
import signal
import site
import subprocess
import sys

import pytest

from openenv_gym.errors import ProviderUnavailableError
from openenv_gym.providers import _runtime
from openenv_gym.providers._docker_owner import host_id
from openenv_gym.providers._runtime import OWNER_FILE, remove_orphaned_folders, runtime_dir
from tests.conftest import stop_process
from tests.providers.conftest import wait_gone


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(_runtime.tempfile, "tempdir", None)  # re-read TMPDIR
    monkeypatch.setattr(_runtime, "_reaped", [])
    return tmp_path


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_folder_whose_owner_lives_in_another_pid_namespace_is_left_alone(tmp_path) -> None:
    # A trainer in a container or under `unshare --pid` that shares this /tmp: its pid names no
    # process here (or another one), so the pid alone must not condemn its folder.
    folder = tmp_path / f"{_dead_pid()}-p1"
    folder.mkdir()
    (folder / "w0.sock").write_text("")
    (folder / OWNER_FILE).write_text(json.dumps({"pid": 1, "start": "5", "host": "elsewhere:4026530000"}))
    remove_orphaned_folders(str(tmp_path))
    assert (folder / "w0.sock").exists()


def test_the_folder_of_an_owner_that_is_gone_is_removed(tmp_path, monkeypatch) -> None:
    legacy = tmp_path / f"{_dead_pid()}-old"  # no owner file: judged by its pid, as before
    legacy.mkdir()
    gone = tmp_path / f"{_dead_pid()}-new"
    monkeypatch.setattr(os, "getpid", lambda: int(gone.name.split("-")[0]))
    _runtime.make_owned_folder(str(gone))
    monkeypatch.undo()
    mine = tmp_path / f"{os.getpid()}-mine"
    _runtime.make_owned_folder(str(mine))
    remove_orphaned_folders(str(tmp_path))
    assert not legacy.exists() and not gone.exists() and mine.exists()


def test_an_owner_file_of_a_reused_pid_does_not_keep_the_folder(tmp_path) -> None:
    folder = tmp_path / f"{os.getppid()}-p1"  # the pid runs, but is not the process that made it
    folder.mkdir()
    (folder / OWNER_FILE).write_text(json.dumps({"pid": os.getppid(), "start": "1", "host": host_id()}))
    remove_orphaned_folders(str(tmp_path))
    assert not folder.exists()


def test_the_sweep_follows_no_link(tmp_path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    root = tmp_path / "runtime"
    root.mkdir()
    os.symlink(target, root / f"{_dead_pid()}-x")
    remove_orphaned_folders(str(root))
    assert target.exists() and oct(target.stat().st_mode & 0o777) == "0o755"


def test_a_runtime_folder_open_to_others_is_closed(tmpdir_env) -> None:
    path = tmpdir_env / f"openenv-gym-{os.getuid()}"
    path.mkdir(mode=0o777)
    os.chmod(path, 0o777)
    assert runtime_dir() == str(path)
    assert oct(path.stat().st_mode & 0o777) == "0o700"


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder of another user needs root")
def test_a_runtime_folder_another_user_made_first_is_refused(tmpdir_env) -> None:
    path = tmpdir_env / f"openenv-gym-{os.getuid()}"
    path.mkdir(mode=0o777)
    os.chown(path, 65534, 65534)  # made by someone else before this user's first trainer
    with pytest.raises(ProviderUnavailableError, match="not a folder of yours"):
        runtime_dir()


def test_a_dead_owner_s_worker_that_could_not_notice_is_ended_by_the_sweep() -> None:
    # A worker stopped (SIGSTOP), or hung in native code holding the GIL, cannot see its owner
    # die: the sweep that removes the owner's folder ends it too, or it would run for good.
    code = ("import gymnasium as gym, openenv_gym, sys, time\n"
            "env = gym.make('OpenEnv/Echo-v0', provider='process', provider_options={'fork': False})\n"
            "env.reset()\n"
            "w = env.unwrapped.worker\n"
            "print(w.pid, w.folder, flush=True)\n"
            "time.sleep(120)\n")
    trainer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    worker = 0
    try:
        worker_pid, folder = trainer.stdout.readline().split()
        worker = int(worker_pid)
        stop_process(worker)
        trainer.kill()
        trainer.wait()
        remove_orphaned_folders(runtime_dir())
        assert wait_gone({worker}, 10) == set(), "the stopped worker of a dead owner still runs"
        assert not os.path.exists(folder)
    finally:
        trainer.kill()
        if worker and os.path.exists(f"/proc/{worker}"):
            os.kill(worker, signal.SIGKILL)


def test_a_runtime_folder_that_is_a_link_is_refused_as_one(tmpdir_env) -> None:
    target = tmpdir_env / "elsewhere"
    target.mkdir(mode=0o700)
    os.symlink(target, tmpdir_env / f"openenv-gym-{os.getuid()}")
    with pytest.raises(ProviderUnavailableError, match="a link or a file, not a folder"):
        runtime_dir()


# A regular install: a stdlib backport in site-packages (PyPI's argparse, dataclasses) would
# shadow the real module in every worker, and not in the trainer, were site-packages put on the
# workers' PYTHONPATH, ahead of the standard library. A source checkout still goes there.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(_runtime.__file__))))


def test_an_installed_package_puts_no_site_packages_on_the_workers_pythonpath(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(site, "getsitepackages", lambda: [_ROOT])  # as a regular install has it
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert _ROOT not in _runtime.worker_environ(trainer_path=True).get("PYTHONPATH", "").split(os.pathsep)


def test_a_source_checkout_is_still_put_on_the_workers_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(site, "getsitepackages", lambda: ["/nonexistent/site-packages"])
    monkeypatch.setattr(site, "ENABLE_USER_SITE", False)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert _runtime.worker_environ()["PYTHONPATH"].split(os.pathsep) == [_ROOT, "/elsewhere"]


@pytest.mark.parametrize("problem", ["folder in its place", "not JSON"])
def test_a_failed_write_json_leaves_no_temp_file(tmp_path, problem: str) -> None:
    # The running `openenv-gym start` rewrites its record each period: a temp file left by
    # each failed try would pile up in the pools folder.
    path = tmp_path / "record.json"
    data: object = {"a": 1}
    if problem == "folder in its place":
        path.mkdir()
    else:
        data = {"a": object()}
    with pytest.raises((OSError, TypeError)):
        _runtime.write_json(str(path), data)
    assert [p.name for p in tmp_path.iterdir()] == (["record.json"] if path.exists() else [])
