"""Programs a confined child cannot run say why, and what to use, instead of an error that
misleads: ``ed`` (its buffer file goes to ``/tmp`` through the C library's ``tmpfile()``, which
ignores TMPDIR) said only "Permission denied"; ``top`` and ``ps`` (``/proc`` is closed) said
"Error, do this: mount -t proc proc /proc", and ``pgrep`` found nothing, silently. ``/tmp`` and
``/proc`` stay closed; unconfined, the same commands run the programs as before."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._confine import abi
from openenv_gym.envs._exec import NO_SANDBOX_FUNCTIONS, minimal_environ

needs_landlock = pytest.mark.skipif(abi() < 1, reason="no Landlock here: /tmp and /proc are open")


def _needs(program: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(shutil.which(program) is None, reason=f"no {program} on this machine")


@pytest.fixture(scope="module")
def git_env() -> Iterator[gym.Env]:
    env = gym.make("OpenEnv/Git-v0", provider="process", step_timeout=30)
    env.reset()
    yield env
    env.close()


def sh(env: gym.Env, command: str) -> str:
    obs, *_ = env.step({"command": command, "workdir": ""})
    assert not obs["timed_out"], obs["output"]
    return obs["output"]


@needs_landlock
@_needs("ed")
def test_ed_says_why_it_cannot_start(git_env: gym.Env) -> None:
    out = sh(git_env, "printf 'a\\n' > f.txt; printf 's/a/b/\\nw\\nq\\n' | ed -s f.txt; echo rc=$?")
    assert "ed cannot start here" in out and "ignores TMPDIR" in out and "sed -i" in out, out
    assert out.rstrip().endswith("rc=1"), out
    # What it suggests works here.
    assert sh(git_env, "sed -i s/a/b/ f.txt && cat f.txt") == "b\n"


@needs_landlock
@pytest.mark.parametrize("command", ["top -b -n 1", "ps aux", "pgrep -l bash", "free", "uptime"])
def test_process_tools_say_proc_is_closed(git_env: gym.Env, command: str) -> None:
    program = command.split()[0]
    if shutil.which(program) is None:
        pytest.skip(f"no {program} on this machine")
    out = sh(git_env, command + "; echo rc=$?")
    assert f"{program}: sandboxed code may not read /proc" in out, out
    assert "mount -t proc" not in out and out.rstrip().endswith("rc=1"), out


def test_programs_that_honour_tmpdir_keep_their_scratch_files_in_the_sandbox(git_env: gym.Env) -> None:
    """Each child has a TMPDIR of its own (Git-v0: the env's ``tmp/``), which these use."""
    out = sh(git_env, 'case "$(mktemp)" in "$TMPDIR"/*) echo mktemp=ok;; esac; '
                      "seq 100000 | sort -S 64k -rn | head -1; "
                      "python3 -c 'import tempfile; tempfile.TemporaryFile().write(b\"x\"); print(\"py=ok\")'")
    assert out.split() == ["mktemp=ok", "100000", "py=ok"], out


def test_a_program_that_is_not_installed_is_still_not_found(git_env: gym.Env) -> None:
    out = sh(git_env, "PATH=/nonexistent; ed; echo rc=$?; ps; echo rc=$?")
    assert out.count("command not found") == 2 and "rc=127" in out, out


def test_the_programs_run_as_before_where_they_can(tmp_path: Path) -> None:
    """Unconfined (``confine=False``, no Landlock), the functions run the programs."""
    env = minimal_environ(HOME=str(tmp_path), **NO_SANDBOX_FUNCTIONS)
    script = ""
    if shutil.which("ed"):
        script += "printf 'a\\n' > f && printf 's/a/b/\\nw\\nq\\n' | ed -s f && cat f; "
    if shutil.which("ps"):
        script += "ps -o comm= -p $$; "
    proc = subprocess.run(["bash", "-c", script + "true"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and "cannot" not in proc.stderr, proc
    assert proc.stdout == ("b\n" if shutil.which("ed") else "") + ("bash\n" if shutil.which("ps") else "")


def test_codings_python_children_do_not_carry_the_bash_functions() -> None:
    """They run Python, not bash: the functions would only be text an agent may print."""
    env = gym.make("OpenEnv/Coding-v0", provider="process")
    try:
        env.reset(seed=0)
        obs, *_ = env.step({"code": "import os; print(sorted(k for k in os.environ if k.startswith('BASH_FUNC')))"})
        assert obs["stdout"].strip() == "[]", obs
    finally:
        env.close()
