"""A file in a pool record's place that cannot be read (corrupt JSON, a field of the wrong
type, a folder, a FIFO) may belong to a running pool: `start NAME` once overwrote it silently
(or failed with a traceback on a folder), and a FIFO hung `start`, `ps`, `stop` and `logs` for
good. Now `start` refuses the name, naming the file and how to free it; `stop`/`logs` name it;
`ps` skips it; a record that names an owner that is gone is still taken over."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from tests.cli.cli_helpers import end, run, spawn, wait_for

NAME = "held"


def _pools(tmp_path) -> str:
    """The pool record folder of CLI runs with ``TMPDIR=tmp_path`` (made by a first `ps`)."""
    assert run("ps", env={"TMPDIR": str(tmp_path)}).returncode == 0
    return os.path.join(str(tmp_path), f"openenv-gym-{os.getuid()}", "pools")


def _put(kind: str, path: str) -> None:
    """Put an unreadable record of ``kind`` at ``path``."""
    if kind == "folder":
        os.mkdir(path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        # A wrong field, naming a live owner (this test): a running pool's record edited by hand.
        text = {"corrupt": "{not json",
                "wrong-field": json.dumps({"name": NAME, "owner_pid": os.getpid(), "env": 5})}[kind]
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def _snapshot(path: str) -> tuple[int, bytes | None]:
    mode = os.lstat(path).st_mode
    if not stat.S_ISREG(mode):
        return stat.S_IFMT(mode), None
    with open(path, "rb") as f:
        return stat.S_IFMT(mode), f.read()


KINDS = ["corrupt", "wrong-field", "folder", "fifo"]


@pytest.mark.parametrize("kind", KINDS)
def test_start_refuses_the_name_and_leaves_the_file(tmp_path, kind) -> None:
    path = os.path.join(_pools(tmp_path), f"{NAME}.json")
    _put(kind, path)
    before = _snapshot(path)
    # The timeout only guards a hang (a FIFO) or a pool that started on the name: both failures.
    out = run("start", "echo", "--provider", "process", "--name", NAME, timeout=60,
              env={"TMPDIR": str(tmp_path)})
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    assert "cannot be read" in out.stderr and path in out.stderr, out.stderr
    assert "remove the file: rm" in out.stderr, out.stderr
    assert _snapshot(path) == before  # not overwritten


@pytest.mark.parametrize("kind", KINDS)
def test_ps_stop_and_logs_name_it_without_hanging(tmp_path, kind) -> None:
    path = os.path.join(_pools(tmp_path), f"{NAME}.json")
    _put(kind, path)
    env = {"TMPDIR": str(tmp_path)}
    out = run("ps", timeout=60, env=env)
    assert out.returncode == 0 and "no pools running" in out.stdout, out.stderr
    assert "left out" in out.stderr and path in out.stderr, out.stderr  # not without a word
    out = run("ps", "--json", timeout=60, env=env)
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stdout
    for command in (["stop", NAME], ["logs", NAME]):
        out = run(*command, timeout=60, env=env)
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        assert f"no running pool named {NAME!r}" in out.stderr and path in out.stderr, out.stderr
    assert run("stop", "--all", timeout=60, env=env).returncode == 0


def test_a_record_of_an_owner_that_is_gone_is_taken_over(tmp_path) -> None:
    folder = _pools(tmp_path)
    os.mkfifo(os.path.join(folder, "other.json"))  # listed on the way: must not hang `start`
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    path = os.path.join(folder, f"{NAME}.json")
    with open(path, "w", encoding="utf-8") as f:
        # A start time no process has: gone, even if the pid is reused meanwhile.
        json.dump({"name": NAME, "owner_pid": int(dead.stdout), "owner_start": "1", "env": 5}, f)
    log = str(tmp_path / "start.log")
    env = {"TMPDIR": str(tmp_path)}
    proc = spawn("start", "echo", "--provider", "process", "--name", NAME, log=log, env=env)
    try:
        wait_for(rf"pool {NAME} is running", log, proc, timeout=180)
        with open(path, encoding="utf-8") as f:
            assert json.load(f)["owner_pid"] == proc.pid
        assert run("stop", NAME, env=env).returncode == 0
        assert proc.wait(60) == 0
        assert not os.path.exists(path)
    finally:
        end(proc)


#: Runs `openenv-gym ARGS` and prints, last, the most memory it took (ru_maxrss, KiB).
_MEASURED = """
import resource, subprocess, sys
out = subprocess.run([sys.executable, "-m", "openenv_gym.cli", *sys.argv[1:]])
print(out.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def test_a_huge_file_in_a_records_place_is_not_read_into_memory(tmp_path) -> None:
    """A 1 GiB (sparse) file in a record's place was read whole by `ps`, `stop`, `logs` and
    `start` (over 1 GiB of memory each) before being found not to be JSON."""
    path = os.path.join(_pools(tmp_path), f"{NAME}.json")
    with open(path, "wb") as f:
        f.truncate(1 << 30)  # sparse: no disk space used
    for command in (["ps"], ["stop", NAME]):
        out = subprocess.run([sys.executable, "-c", _MEASURED, *command], capture_output=True,
                             text=True, timeout=120, env=dict(os.environ, TMPDIR=str(tmp_path)))
        code, max_rss_kib = map(int, out.stdout.split()[-2:])
        assert "Traceback" not in out.stderr, out.stderr
        assert max_rss_kib < 512 * 1024, (command, max_rss_kib)
    assert code == 1 and "larger than" in out.stderr and path in out.stderr, out.stderr


@pytest.mark.parametrize("how", ["link", "copy"])
def test_a_record_under_another_name_is_not_a_second_pool(tmp_path, how: str) -> None:
    # `ps` listed a running pool twice when its record was linked or copied to another name,
    # and `stop`/`logs` of that name acted on the pool the file names.
    folder = _pools(tmp_path)
    log = str(tmp_path / "start.log")
    env = {"TMPDIR": str(tmp_path)}
    proc = spawn("start", "echo", "--provider", "process", "--name", NAME, log=log, env=env)
    try:
        wait_for(rf"pool {NAME} is running", log, proc, timeout=180)
        record, other = os.path.join(folder, f"{NAME}.json"), os.path.join(folder, "other.json")
        if how == "link":
            os.symlink(record, other)
        else:
            with open(record, "rb") as src, open(other, "wb") as dst:
                dst.write(src.read())
        listed = run("ps", env=env).stdout
        assert listed.count(NAME) == 1 and "other" not in listed, listed
        out = run("stop", "other", env=env)
        assert out.returncode == 1 and "under another name" in out.stderr, out.stderr
        assert proc.poll() is None  # the pool the file names still runs
        assert run("stop", NAME, env=env).returncode == 0
        assert proc.wait(60) == 0
    finally:
        end(proc)
