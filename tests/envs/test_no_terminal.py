"""Interactive programs in Coding-v0 and Git-v0 sandboxes, which have no terminal: each one an
agent starts by mistake ends at once with a message saying what to do instead (it used to wait
out the step's timeout), and the non-interactive uses of the same programs keep working."""

from __future__ import annotations

import shutil
from typing import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)

#: Far above what any command here needs: a command that waited for keys would time out.
TIMEOUT = 15.0

needs_vim = pytest.mark.skipif(shutil.which("vim") is None, reason="no vim on this machine (the "
                               "process provider runs the machine's programs)")


@pytest.fixture(scope="module")
def git_env() -> Iterator[gym.Env]:
    env = gym.make("OpenEnv/Git-v0", provider="process", step_timeout=TIMEOUT)
    env.reset()
    obs, *_ = env.step({"command": "git init -q repo && cd repo && for i in 1 2 3; do echo $i > f$i && "
                                   "git add f$i && git commit -qm c$i; done"})
    assert int(obs["exit_code"]) == 0, obs["output"]
    yield env
    env.close()


def sh(env: gym.Env, command: str) -> tuple[str, int]:
    obs, *_ = env.step({"command": command, "workdir": "repo"})
    assert not obs["timed_out"], f"{command!r} waited for input: {obs['output'][-500:]!r}"
    return obs["output"], int(obs["exit_code"])


def test_git_commit_without_a_message_says_to_use_m(git_env: gym.Env) -> None:
    out, code = sh(git_env, "echo x >> f1 && git add f1 && git commit")
    assert code == 1 and "Aborting commit due to empty commit message" in out
    assert 'git commit -m "message"' in out
    out, code = sh(git_env, "git commit -m 'Edit f1' && git log -1 --format=%s")
    assert code == 0 and out.strip().endswith("Edit f1") and "hint" not in out


def test_git_tag_a_without_a_message_says_to_use_m(git_env: gym.Env) -> None:
    out, code = sh(git_env, "git tag -a v1")
    assert code != 0 and "git tag -a NAME -m" in out
    assert sh(git_env, "git tag -a v1 -m 'Version 1' && git tag -l")[0].strip() == "v1"


def test_an_editor_given_a_message_keeps_it_silently(git_env: gym.Env) -> None:
    out, code = sh(git_env, "git commit -q --amend && git log -1 --format=%s")
    assert code == 0 and "hint" not in out and out.strip() == sh(git_env, "git log -1 --format=%s")[0].strip()


def test_git_rebase_i_says_the_todo_list_ran_unchanged_and_how_to_edit_it(git_env: gym.Env) -> None:
    fresh = ("cd .. && rm -rf rb && git init -q rb && cd rb && for i in 1 2 3 4; do echo $i > f$i && "
             "git add f$i && git commit -qm c$i; done && ")
    out, code = sh(git_env, fresh + "git rebase -i HEAD~2 && git log --format=%s")
    assert code == 0 and "GIT_SEQUENCE_EDITOR=" in out and "every commit picked" in out
    assert out.split()[-4:] == ["c4", "c3", "c2", "c1"]
    # The recipe the hint gives works here.
    out, code = sh(git_env, fresh + 'GIT_SEQUENCE_EDITOR="sed -i 2,3s/^pick/fixup/" git rebase -i HEAD~3 '
                                    ">/dev/null 2>&1 && git log --format=%s && cat f4")
    assert (out.split(), code) == (["c2", "c1", "4"], 0)
    # --autosquash, which needs no editing, still applies the fixups.
    out, code = sh(git_env, fresh + "echo 22 > f2 && git commit -qa --fixup HEAD~2 && "
                                    "git rebase -q -i --autosquash HEAD~4 >/dev/null 2>&1 && "
                                    "git log --format=%s && git show HEAD~2:f2")
    assert (out.split(), code) == (["c4", "c3", "c2", "c1", "22"], 0)


@pytest.mark.parametrize("command", ["read x; echo rc=$?", "python3; echo rc=$?", "cat; echo rc=$?",
                                     "python3 -c 'input()' 2>&1 | tail -1",
                                     "git add -p; echo rc=$?", "git mergetool; echo rc=$?"])
def test_programs_reading_stdin_see_its_end(git_env: gym.Env, command: str) -> None:
    out, code = sh(git_env, command)
    assert code == 0 and ("rc=" in out or "EOFError" in out), out


def test_stdin_given_in_the_command_still_reaches_the_program(git_env: gym.Env) -> None:
    out, code = sh(git_env, "echo 3 | python3 -c 'print(int(input()) * 2)'")
    assert (out, code) == ("6\n", 0)
    out, code = sh(git_env, "echo y >> f2 && printf 'y\\n' | git add -p >/dev/null && git diff --cached --name-only")
    assert (out, code) == ("f2\n", 0)
    sh(git_env, "git reset -q --hard")


@needs_vim
@pytest.mark.parametrize("command", ["vi f1", "vim f1", "view f1", "vimdiff f1 f2", "vim -c 's/1/2/' f1",
                                     "git difftool -y HEAD~1"])
def test_full_screen_vim_quits_with_a_message(git_env: gym.Env, command: str) -> None:
    out, code = sh(git_env, command + "; echo rc=$?")
    assert "no terminal here, so vim cannot be used interactively" in out
    if not command.startswith("git"):
        assert out.rstrip().endswith("rc=1")
    assert sh(git_env, "git status --porcelain")[0] == ""


@needs_vim
def test_git_mergetool_on_a_conflict_quits_with_the_message_and_leaves_no_files() -> None:
    """With no ``merge.tool``, git guessed vimdiff and asked "Hit return to start merge
    resolution tool" on stdin: that read its end, and git stopped there, with no word of the
    missing terminal and its ``app_BASE_*.py``/``LOCAL``/``REMOTE``/``BACKUP`` files left
    untracked, failing the task's clean-worktree check until the agent found them."""
    env = gym.make("OpenEnv/Git-v0", provider="process", task="merge-conflict", step_timeout=TIMEOUT)
    try:
        env.reset(seed=0)
        sh(env, "git merge feature")
        out, _ = sh(env, "git mergetool; echo rc=$?")
        assert "no terminal here, so vim cannot be used interactively" in out, out
        assert out.rstrip().endswith("rc=1"), out
        assert sh(env, "git status --porcelain")[0] == "UU app.py\n"
    finally:
        env.close()


@needs_vim
def test_vim_used_as_a_command_still_edits(git_env: gym.Env) -> None:
    out, code = sh(git_env, "cd .. && printf '1\\n2\\n3\\n' > g && vim -es -c '%s/1/one/' -c wq g && "
                            "printf '%%s/2/two/\\nwq\\n' | ex -s g && "
                            "vim -c '%s/3/three/' -c wq g >/dev/null 2>&1 && cat g && rm g")
    assert (out, code) == ("one\ntwo\nthree\n", 0)


@pytest.fixture(scope="module", params=[False, True], ids=["one-shot", "persistent"])
def coding_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    env = gym.make("OpenEnv/Coding-v0", provider="process",
                   env_kwargs={"step_timeout": TIMEOUT, "persistent": request.param})
    env.reset()
    env.persistent = request.param  # type: ignore[attr-defined]  (the wrapper takes attributes)
    yield env
    env.close()


def run(env: gym.Env, code: str) -> dict:
    obs, *_ = env.step({"code": code})
    assert not obs["timed_out"], f"{code!r} waited for input: {obs['stdout'][-300:]!r} {obs['stderr'][-300:]!r}"
    return obs


def test_help_is_defined_as_in_python(coding_env: gym.Env) -> None:
    obs = run(coding_env, "help(len)\nhelp()")
    assert int(obs["exit_code"]) == 0, obs["stderr"]
    assert "Help on built-in function len" in obs["stdout"]


def test_input_and_a_debugger_see_the_end_of_stdin(coding_env: gym.Env) -> None:
    assert "EOFError" in run(coding_env, "input('name? ')")["stderr"]
    assert "BdbQuit" in run(coding_env, "breakpoint()")["stderr"]
    assert "EOFError" in run(coding_env, "import getpass; getpass.getpass()")["stderr"]


@needs_vim
def test_vim_started_by_the_code_quits_with_a_message(coding_env: gym.Env) -> None:
    obs = run(coding_env, "kept = 42\nimport os, subprocess\nopen('f', 'w').write('a\\n')\n"
                          "print(os.system('vi f') >> 8)\n"
                          "print(subprocess.run(['vim', 'f'], capture_output=True).returncode)")
    assert obs["stdout"].split()[-2:] == ["1", "1"], obs["stdout"]
    assert "no terminal here, so vim cannot be used interactively" in obs["stderr"]
    if coding_env.persistent:  # type: ignore[attr-defined]
        assert run(coding_env, "print(kept)")["stdout"] == "42\n"  # the REPL was not restarted
