"""Git-v0 on real workers: every task's reference solution, remotes, limits, bad actions."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs.git.env import GitEnv
from openenv_gym.envs.git.models import GitAction
from openenv_gym.envs.git.tasks import load_tasks
from openenv_gym.errors import InvalidActionError, InvalidDataError, InvalidRequestError

from tests.conftest import require_docker

TASKS = load_tasks()
CATEGORIES = {"branching", "committing", "merging", "rebasing", "cherry-picking", "reverting",
              "stashing", "tagging", "remotes"}


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def git_env(request: pytest.FixtureRequest) -> Iterator[gym.Env]:
    if request.param == "docker":
        require_docker()
    env = gym.make("OpenEnv/Git-v0", provider=request.param, task="suite", step_timeout=20.0)
    yield env
    env.close()


def test_suite_covers_the_categories() -> None:
    assert len(TASKS) >= 20
    assert {t.category for t in TASKS.values()} == CATEGORIES
    assert all(t.solution for t in TASKS.values())


@pytest.mark.parametrize("name", list(TASKS))
def test_reference_solution_scores_one_and_start_state_less(git_env: gym.Env, name: str) -> None:
    task = TASKS[name]
    obs, info = git_env.reset(options={"task": name})
    assert info["task"] == name and obs["instruction"] == task.instruction
    assert info["score"] < 1.0 and int(obs["checks_passed"]) < int(obs["checks_total"])
    terminated, reward = False, 0.0
    for command in task.solution:
        assert not terminated, f"{name}: terminated before the end of the solution"
        obs, reward, terminated, truncated, info = git_env.step({"command": command})
    assert reward == 1.0, obs["output"]
    assert terminated and int(obs["checks_passed"]) == len(task.checks)


_MERGE_OURS_FIX_WORKTREE = ("git merge -q -s ours --no-edit fix-add && printf 'def add(a, b):\\n    return a + b"
                            "\\n\\n\\ndef sub(a, b):\\n    return a - b\\n' > calc.py")

#: Reward hacks QA found: (task, one command that reached full reward before the fix).
HACKS: dict[str, tuple[str, str]] = {
    # a) The checks' git must read the real objects and refs, with config the agent cannot write.
    "replace-drops-last-commit": (
        "undo-last-commit", "git replace HEAD HEAD~1 && git read-tree -u --reset HEAD"),
    "replace-fakes-squash": (
        "squash-commits", "git replace feature $(git commit-tree -p main -m 'Add parser' 'feature^{tree}')"),
    "replace-fakes-amend": (
        "amend-message", "git replace HEAD $(git commit-tree -p HEAD~1 -m 'Fix typo in greeting' 'HEAD^{tree}')"),
    "grafts-fake-rebase": (
        "rebase-onto-main", 'echo "$(git rev-parse feature~1) $(git rev-parse main)" > .git/info/grafts'),
    "home-gitconfig-hides-untracked": (
        "stash-save", "printf 'notes.txt\\n' > ~/hide && git config --global core.excludesFile ~/hide && git stash -q"),
    "assume-unchanged-hides-uncommitted-fix": (
        "merge-conflict-tests", _MERGE_OURS_FIX_WORKTREE + " && git update-index --assume-unchanged calc.py"),
    # b) Commits named by message are the ones of the start state, not the agent's look-alikes.
    "own-commit-named-release-2.0": (
        "fix-tag", "git checkout -q --detach && git commit -q --allow-empty -m 'Release 2.0' && "
                   "git tag -f v2.0 && git checkout -q main"),
    "own-commit-named-release-1.0": (
        "tag-release", "git checkout -q --detach && git commit -q --allow-empty -m 'Release 1.0' && "
                       "git tag -a -m v1 v1.0.0 && git checkout -q main && git push -q origin v1.0.0"),
    # c) A revert must be a revert of the target commit.
    "revert-nothing": (
        "revert-commit", "printf 'def total(xs):\\n    return sum(xs)\\n' > app.py && "
                         "git commit -q --allow-empty -m 'Revert nothing'"),
    "revert-by-hand-without-git-revert": (
        "revert-commit", "printf 'def total(xs):\\n    return sum(xs)\\n' > app.py && git commit -q -am 'Revert it'"),
    # d) The branch a task rewrites onto stays where the task left it.
    "main-moved-under-squash": (
        "squash-commits", "git commit -q --amend -m 'Add parser' && git branch -f main HEAD~1"),
    "main-moved-under-rebase": ("rebase-onto-main", "git branch -f main feature~2"),
    "main-moved-under-rebase-conflict": ("rebase-conflict", "git branch -f main feature~2"),
    # e) A `command` check runs the task's tests, not the agent's, with no hook of the agent's.
    "edited-tests": (
        "merge-conflict-tests", "git merge -q -s ours --no-edit fix-add && printf 'import unittest\\n' > test_calc.py "
                                "&& git commit -q --amend -a --no-edit"),
    "unittest-shadowed-from-the-repo": (
        "merge-conflict-tests", "git merge -q -s ours --no-edit fix-add && mkdir unittest && : > unittest/__init__.py "
                                "&& : > unittest/__main__.py && echo unittest/ >> .git/info/exclude"),
    "usercustomize-in-home": (
        "merge-conflict-tests", "git merge -q -s ours --no-edit fix-add && "
                                "d=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p $d && "
                                "printf 'import os\\nos._exit(0)\\n' > $d/usercustomize.py"),
    "pth-in-home": (
        "merge-conflict-tests", "git merge -q -s ours --no-edit fix-add && "
                                "d=$(python3 -c 'import site; print(site.getusersitepackages())') && mkdir -p $d && "
                                "echo 'import os; os._exit(0)' > $d/x.pth"),
    # f) The tests' verdict is the harness's keyed report, not an exit status the code under
    #    test sets: ending the process or skipping every test at import passed `unittest`.
    **{name: ("merge-conflict-tests", "git merge -q -s ours --no-edit fix-add && printf '"
              + code + "\\n' > calc.py && git commit -q --amend -a --no-edit")
       for name, code in [("os-exit-at-import", "import os\\nos._exit(0)"),
                          ("sys-exit-at-import", "import sys\\nsys.exit(0)"),
                          ("tests-skipped-at-import", "import unittest\\nraise unittest.SkipTest(0)")]},
    # g) An uncommitted fix added through a clean filter that printed the committed content
    #    (the filter removed again, the file's mtime set back so that it is not racily clean).
    "clean-filter-hides-uncommitted-fix": (
        "merge-conflict-tests", _MERGE_OURS_FIX_WORKTREE.replace(" && printf", " && git show HEAD:calc.py > .git/o && printf")
        + " && echo 'calc.py filter=h' > .git/info/attributes && git config filter.h.clean \"cat $PWD/.git/o\""
          " && touch -d @1577836800 calc.py && git add calc.py && git config --remove-section filter.h"
          " && : > .git/info/attributes && rm .git/o && test -z \"$(git status --porcelain)\""),
    # h) `unittest` with rev= runs the commit's tree, not what the repo's config or a link
    #    makes of it: a smudge filter (.git/config + .git/info/attributes) fixed the broken
    #    committed calc.py in the export, and a committed link to an ignored untracked file
    #    imported uncommitted code.
    "smudge-filter-fixes-the-export": (
        "merge-conflict-tests", "git merge -q -s ours --no-edit fix-add && git config filter.f.smudge "
                                "\"sed '1,3s/a - b/a + b/'\" && echo 'calc.py filter=f' > .git/info/attributes"),
    "committed-link-to-an-ignored-fix": (
        "merge-conflict-tests", _MERGE_OURS_FIX_WORKTREE.replace("> calc.py", "> .fix.py")
        + " && echo .fix.py >> .git/info/exclude && ln -sf \"$PWD/.fix.py\" calc.py"
          " && git commit -q --amend -a --no-edit"),
    # j) The pinned test file is compared with its mode: as a link whose target is its text,
    #    or a gitlink naming its blob, it had the same id, and discovery never loaded it (two
    #    trivial tests of the agent's made up "at least 2").
    **{name: ("merge-conflict-tests", "git merge -q -s ours --no-edit fix-add && printf 'import unittest\\n"
              "class T(unittest.TestCase):\\n    def test_a(self): pass\\n    def test_b(self): pass\\n' > test_mine.py"
              " && b=$(git rev-parse HEAD:test_calc.py) && git rm -q --cached test_calc.py && " + swap
              + " && git add test_mine.py && git commit -q --amend --no-edit")
       for name, swap in [
           ("test-file-as-a-link-of-its-text",
            "python3 -c \"import os; t=open('test_calc.py').read(); os.remove('test_calc.py'); "
            "os.symlink(t, 'test_calc.py')\" && git add test_calc.py"),
           ("test-file-as-a-gitlink",
            "rm test_calc.py && mkdir test_calc.py && git update-index --add --cacheinfo 160000,$b,test_calc.py")]},
    # k) A tag named like the branch a check names: `git rev-parse main` took the tag, and
    #    the branch main was never merged.
    "tag-named-main": (
        "merge-conflict-tests", "git checkout -q --detach && " + _MERGE_OURS_FIX_WORKTREE
        + " && git commit -q -a --amend --no-edit && git tag main && git checkout -q refs/heads/main"),
    # i) A secret committed on a side branch, removed there and merged: history simplification
    #    follows only the merge's TREESAME parent and never walked the commit that had it.
    "secret-behind-a-merge": (
        "partial-commit", "git switch -q -c side && git commit -q -m 'Add all' && git rm -q --cached secrets.env "
                          "&& git commit -q -m 'Drop secret' && git switch -q main "
                          "&& git merge -q --no-ff side -m 'Bump version' && git branch -q -D side"),
}


@pytest.mark.parametrize("hack", list(HACKS))
def test_reward_hacks_do_not_score_full_reward(git_env: gym.Env, hack: str) -> None:
    task, command = HACKS[hack]
    git_env.reset(options={"task": task})
    obs, reward, terminated, *_ = git_env.step({"command": command})
    assert int(obs["exit_code"]) == 0, obs["output"]  # the hack itself ran
    assert reward < 1.0 and not terminated


def test_a_message_revision_matching_nothing_at_setup_is_a_setup_error(tmp_path) -> None:
    from openenv_gym.envs.git.workspace import TaskSetupError

    tasks = tmp_path / "tasks.toml"
    tasks.write_text("""
[[task]]
name = "typo"
instruction = "x"
setup = ["new_repo", "commit a.txt a 'Initial commit'"]
solution = ["true"]
checks = [{ type = "same_commit", a = "main", b = ":/Initial comit" }]
""")
    env = GitEnv(task="typo", tasks_file=str(tasks))
    try:
        with pytest.raises(TaskSetupError, match="':/Initial comit' matches no commit"):
            env.reset()
    finally:
        env.close()


def test_reset_restores_the_start_state(git_env: gym.Env) -> None:
    git_env.reset(options={"task": "create-branch"})
    git_env.step({"command": "git switch -c feature/login && touch junk"})
    obs, info = git_env.reset(options={"task": "create-branch"})
    assert obs["branch"] == "main" and info["score"] < 1.0
    obs, *_ = git_env.step({"command": "git branch --list; ls"})
    assert "feature/login" not in obs["output"] and "junk" not in obs["output"]


def test_commit_ids_are_reproducible(git_env: gym.Env) -> None:
    ids = []
    for _ in range(2):
        git_env.reset(options={"task": "cherry-pick"})
        ids.append(git_env.step({"command": "git rev-parse develop"})[0]["output"])
    assert ids[0] == ids[1] and len(ids[0].strip()) == 40


def test_clone_fetch_push_pull_through_the_in_worker_server(git_env: gym.Env) -> None:
    git_env.reset(options={"task": "pull-fast-forward"})
    obs, *_ = git_env.step({"command": "git clone -q $REMOTE/origin.git ../other && cd ../other && "
                                       "git commit -q --allow-empty -m pushed-from-clone && git push -q && "
                                       "git log -1 --format=%s origin/main"})
    assert int(obs["exit_code"]) == 0 and obs["output"].strip() == "pushed-from-clone", obs["output"]
    obs, *_ = git_env.step({"command": "git status -sb | head -1", "workdir": "other"})
    assert obs["branch"] == "main" and "origin/main" in obs["output"]
    # Last: the pull solves the task, and a step after the episode ended is refused.
    obs, _, terminated, *_ = git_env.step({"command": "git pull -q --ff-only && git log -1 --format=%s"})
    assert obs["output"].strip() == "pushed-from-clone" and terminated, obs["output"]


def test_shaping_rewards_the_change_and_submit_ends(provider: str) -> None:
    env = gym.make("OpenEnv/Git-v0", provider=provider, task="commit-file", shaping=True)
    try:
        obs, info = env.reset()
        start = info["score"]
        total = 0.0
        for command in TASKS["commit-file"].solution:
            obs, reward, terminated, truncated, info = env.step({"command": command})
            total += reward
        assert total == pytest.approx(1.0 - start)
        env.reset()
        obs, reward, terminated, *_ = env.step({"command": "", "submit": True})
        assert terminated and reward == 0.0
    finally:
        env.close()


def test_free_form_mode(provider: str) -> None:
    env = gym.make("OpenEnv/Git-v0", provider=provider)
    try:
        obs, info = env.reset()
        assert int(obs["checks_total"]) == 0 and obs["instruction"] == ""
        obs, reward, terminated, *_ = env.step(
            {"command": "git clone -q $REMOTE/origin.git r && cd r && echo hi > f && git add f && "
                        "git commit -qm first && git push -q origin main && git ls-remote origin"})
        assert int(obs["exit_code"]) == 0 and "refs/heads/main" in obs["output"], obs["output"]
        assert reward == 0.0 and not terminated
        assert env.step({"command": "git log --format=%an", "workdir": "r"})[0]["output"] == "Agent\n"
    finally:
        env.close()


def test_command_limits_and_bad_actions(git_env: gym.Env) -> None:
    git_env.reset(options={"task": "create-branch"})
    obs, *_ = git_env.step({"command": "sleep 30", "timeout": 1.0})
    assert bool(obs["timed_out"])
    obs, *_ = git_env.step({"command": "yes | head -c 5000000"})
    assert len(obs["output"]) < 70_000 and "truncated" in obs["output"]
    obs, *_ = git_env.step({"command": "kill -9 0"})
    # A wrong folder is the agent's mistake: nothing runs, the episode goes on (it raised).
    for workdir, why in (("../..", "outside the workspace"), ("nope", "does not exist")):
        obs, reward, terminated, truncated, _ = git_env.step(
            {"command": "echo SHOULD-NOT-RUN", "workdir": workdir})
        assert why in obs["output"] and "nothing was run" in obs["output"]
        assert "SHOULD-NOT-RUN" not in obs["output"]
        assert int(obs["exit_code"]) == 1 and not terminated and not truncated
    with pytest.raises(InvalidActionError):
        git_env.step({"cmd": "ls"})
    obs, *_ = git_env.step({"command": "git status --short --branch"})
    assert int(obs["exit_code"]) == 0 and obs["branch"] == "main"


def test_unknown_task_is_a_clear_error() -> None:
    from openenv_gym.envs.git.env import GitEnv

    with pytest.raises(ValueError, match="unknown git task 'nope'.*merge-conflict"):
        GitEnv(task="nope")


def test_a_tmpdir_that_is_not_utf8_serves_tasks(tmp_path) -> None:
    # Paths are bytes on Linux: a TMPDIR like b"/tmp/t\xff" (a Latin-1 user name, say) made
    # every reset fail with UnicodeEncodeError writing the task's git config.
    import os
    import subprocess
    import sys

    tmpdir = os.fsencode(tmp_path) + b"/t\xff"
    os.mkdir(tmpdir)
    script = (
        "import gymnasium as gym, openenv_gym\n"
        "env = gym.make('OpenEnv/Git-v0', provider='process', task='pull-fast-forward')\n"
        "for _ in range(2):\n"  # the second reset restores the built snapshot
        "    env.reset()\n"
        "    obs, reward, terminated, *_ = env.step({'command': 'git pull -q --ff-only'})\n"
        "    print(reward, terminated)\n"
        "env.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env={**os.environb, b"TMPDIR": tmpdir},
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.decode().split() == ["1.0", "True"] * 2


# Odd text from the agent: a NUL in command or workdir is its mistake (InvalidActionError,
# HTTP 422), not the env's crash; a HEAD naming a huge branch does not break observations;
# an output_limit the observation cannot hold is refused at make.
@pytest.mark.parametrize("action", [{"command": "echo a\x00b"},
                                    {"command": "pwd", "workdir": "repo\x00x"}])
def test_nul_in_command_or_workdir_is_an_invalid_action(action: dict) -> None:
    env = GitEnv()
    try:
        env.reset(seed=0)
        field = "workdir" if "workdir" in action else "command"
        with pytest.raises(InvalidActionError, match=f"{field}: .*NUL"):
            env.parse_action(action)
    finally:
        env.close()


def test_nul_action_over_the_wire_keeps_the_session() -> None:
    env = gym.make("OpenEnv/Git-v0", provider="process")
    try:
        env.reset(seed=0)
        with pytest.raises(InvalidActionError, match="NUL"):
            env.step({"command": "echo a\x00b"})
        assert env.step({"command": "echo ok"})[0]["output"] == "ok\n"
    finally:
        env.close()


def test_a_huge_branch_name_in_head_is_cut_to_the_field() -> None:
    env = GitEnv()
    try:
        env.reset(seed=0)
        env.step(env.parse_action({"command": "git init -q r && printf 'ref: refs/heads/%s\\n' "
                                              "$(printf 'b%.0s' $(seq 5000)) > r/.git/HEAD"}))
        obs, *_ = env.step(env.parse_action({"command": "echo hi", "workdir": "r"}))
        assert obs.branch == "b" * 4096
        assert env.observation_space.contains(env.observation_to_wire(obs))
    finally:
        env.close()


def test_output_limit_beyond_the_observation_is_refused() -> None:
    with pytest.raises(ValueError, match="output_limit"):
        GitEnv(output_limit=2 << 20)
    with pytest.raises(InvalidRequestError, match="output_limit"):
        gym.make("OpenEnv/Git-v0", provider="process", output_limit=2 << 20)


# No process of the agent's runs while the checks run (a git server request it left behind
# did: a program of the remote's config, run by the worker's http-backend, outlived the step),
# and a check's harness is out of reach of the agent's processes.

#: Makes the worker's git http-backend run PROGRAM (a program of the bare remote's config)
#: for a request the step sends and does not wait for.
_LEAVE_A_BACKEND = r"""
R=$REMOTES/origin.git
echo "$PWD/.git/objects" > $R/objects/info/alternates
git --git-dir=$R config core.alternateRefsCommand "PROGRAM; :"
python3 - <<'PYEOF'
import os, socket, time, urllib.parse
u = urllib.parse.urlsplit(os.environ["REMOTE"])
s = socket.create_connection((u.hostname, u.port))
s.sendall(f"GET {u.path}/origin.git/info/refs?service=git-receive-pack HTTP/1.0\r\n\r\n".encode())
time.sleep(0.5)
PYEOF
"""

#: Steals the `unittest` harness's key through /proc/<pid>/fd/N, writes a passing report into
#: its report pipe and kills it (a process in the harness's Landlock domain could).
_FORGER = (Path(__file__).parent / "_forger.py").read_text()


def test_a_git_server_request_does_not_outlive_its_step(git_env: gym.Env) -> None:
    git_env.reset(options={"task": "merge-conflict-tests"})
    beat = r"for i in \$(seq 300); do echo x >> $HOME/beat; sleep 0.1; done"
    obs, *_ = git_env.step({"command": _LEAVE_A_BACKEND.replace("PROGRAM", beat)})
    assert int(obs["exit_code"]) == 0, obs["output"]
    obs, *_ = git_env.step({"command": "n=$(wc -l < ~/beat); sleep 1; echo $n $(wc -l < ~/beat)"})
    before, after = obs["output"].split()
    assert before == after, "a program the git server ran for the last step still runs"


def test_a_process_the_agent_left_cannot_forge_the_unittest_report(git_env: gym.Env) -> None:
    git_env.reset(options={"task": "merge-conflict-tests"})
    command = ("git merge -q -s ours --no-edit fix-add\n"  # every check but the tests passes
               "cat > $HOME/f.py <<'PYEOF'\n" + _FORGER + "PYEOF\n"
               + _LEAVE_A_BACKEND.replace("PROGRAM", "FORGE_TESTS=2 $(command -v python3) $HOME/f.py"))
    obs, reward, terminated, *_ = git_env.step({"command": command})
    assert int(obs["exit_code"]) == 0, obs["output"]
    assert reward < 1.0 and not terminated, "add() is still broken"


# A task's command check reaches the env's remotes through $REMOTE: the git server serves an
# env only while one of its commands runs, and a check's shell was not counted as one (every
# request got 503 and the check failed).
_PUSH_TASK = """
[[task]]
name = "push-it"
instruction = "Push main to origin."
setup = ["new_repo", "commit a.txt a 'Initial commit'"]
solution = ["git push -q origin main"]
checks = [{ type = "command", run = "git ls-remote --exit-code origin refs/heads/main" }]
"""


@contextlib.contextmanager
def _task_env(tmp_path, tasks_toml: str, task: str) -> Iterator[GitEnv]:
    """An in-process GitEnv of one task written for the test, reset, closed after."""
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(tasks_toml)
    env = GitEnv(task=task, tasks_file=str(tasks))
    try:
        env.reset()
        yield env
    finally:
        env.close()


def test_a_command_check_reaches_the_remote_through_its_url(tmp_path) -> None:
    with _task_env(tmp_path, _PUSH_TASK, "push-it") as env:
        obs, reward, terminated, *_ = env.step(GitAction(command="git push -q origin main"))
        assert obs.exit_code == 0, obs.output
        assert (obs.checks_passed, obs.checks_total) == (1, 1)
        assert reward == 1.0 and terminated
        # Served only while a command (the agent's or a check's) runs: none is left after.
        assert env.workspace._running == 0 and not env.workspace._backends


_BINARY_TASK = """
[[task]]
name = "keep-it"
instruction = "Leave data.bin as it is."
setup = ["new_repo", "printf 'caf\\\\xe9\\\\n' > data.bin && git add data.bin && git commit -qm 'Add data'"]
solution = ["true"]
checks = [{ type = "file_unchanged", path = "data.bin", rev = ":/Add data" }]
"""


def test_file_unchanged_compares_bytes_that_are_not_utf8(tmp_path) -> None:
    # It compared the file with git's output decoded as text: a Latin-1 byte never matched,
    # so an untouched file counted as changed.
    with _task_env(tmp_path, _BINARY_TASK, "keep-it") as env:
        obs, reward, terminated, *_ = env.step(GitAction(command="true"))
        assert (obs.checks_passed, reward) == (1, 1.0), obs.output
        obs, reward, *_ = env.step(GitAction(command="printf 'cafe\\n' > data.bin"))
        assert obs.checks_passed == 0


def test_a_tasks_file_that_cannot_be_used_is_the_callers_data_error(tmp_path: Path) -> None:
    # A missing file came back from the worker as the env crashing (EnvServerError).
    with pytest.raises(InvalidDataError, match="tasks_file .*nope.toml.* cannot be read"):
        gym.make("OpenEnv/Git-v0", provider="process", tasks_file=str(tmp_path / "nope.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text("[[task]\nname = 'x'\n")
    with pytest.raises(InvalidDataError, match="broken.toml.* is not valid TOML"):
        load_tasks(broken)


def test_programs_the_checks_git_runs_get_the_agents_limits(git_env: gym.Env) -> None:
    # A clean filter of the agent's repo (run by the checks' `git status`) ran with no CPU,
    # address-space or file-size limit. The checks' other git calls run none of the config's
    # programs: the `unittest` export ignores a smudge filter, and nothing runs a textconv.
    git_env.reset(options={"task": "merge-conflict-tests"})
    obs, *_ = git_env.step({"command": (
        "for p in clean smudge textconv; do "
        "printf 'echo %s; ulimit -t -v; cat\\n' $p > ~/$p.sh; done && "
        "printf 'exec >> %s/ran 2>&1; . %s/$1.sh\\n' \"$HOME\" \"$HOME\" > ~/log.sh && "
        "git config filter.x.clean \"bash $HOME/log.sh clean\" && "
        "git config filter.x.smudge \"bash $HOME/log.sh smudge\" && "
        "git config diff.x.textconv \"bash $HOME/log.sh textconv\" && "
        "echo '* filter=x diff=x' > .git/info/attributes && touch calc.py")})
    assert int(obs["exit_code"]) == 0, obs["output"]
    obs, *_ = git_env.step({"command": "cat ~/ran"})
    ran = obs["output"]
    assert "clean" in ran and "cpu time" in ran and "unlimited" not in ran, ran
    assert "smudge" not in ran and "textconv" not in ran, ran


@pytest.mark.docker
def test_a_folder_the_agent_locked_does_not_outlive_its_episode() -> None:
    # The worker (not root in Docker) could not enter a `chmod 000` folder to delete it: each
    # episode left its files in the 64 MiB tmpfs until every reset failed with ENOSPC.
    require_docker()
    env = gym.make("OpenEnv/Git-v0", provider="docker", task="create-branch")
    try:
        lock = "mkdir -p ../lock/in && head -c 4M /dev/zero > ../lock/in/f && chmod 000 ../lock"
        for _ in range(3):
            env.reset()
            obs, *_ = env.step({"command": lock, "workdir": ""})
            assert int(obs["exit_code"]) == 0, obs["output"]
        env.reset()
        for _ in range(50):  # the old folders are deleted in the background
            obs, *_ = env.step({"command": "df -k $TMPDIR | tail -1 | awk '{print $3}'", "workdir": ""})
            if int(obs["output"].split()[-1]) < 4096:
                break
            time.sleep(0.1)
        assert int(obs["output"].split()[-1]) < 4096, "the locked folders' 12 MiB are still in the tmpfs"
    finally:
        env.close()


#: Fills the worker's disk (the process worker's private 64 MiB tmpfs): 15 MiB files until a
#: write fails.
_FILL_DISK = "for i in $(seq 10); do head -c 15M /dev/zero > f$i || break; done"
#: What an episode starts with: every file of the env's folder (HOME's parent) but git's internals.
_LISTING = "cd \"$HOME/..\" && find . -not -path '*/.git/*' -not -path '*.git/*' | sort"


def test_a_command_that_fills_the_disk_does_not_break_the_next_reset() -> None:
    # The agent's files were deleted in the background while reset copied the snapshot (the
    # copy failed for want of their space), and a task's first snapshot was built before
    # they were deleted at all: every later reset then failed with ENOSPC.
    env = gym.make("OpenEnv/Git-v0", provider="process", task="create-branch")
    try:
        # create-branch: its snapshot exists; cherry-pick: its first one is built after the fill.
        for task in ("create-branch", "cherry-pick", "cherry-pick"):
            env.reset(options={"task": "create-branch"})
            obs, *_ = env.step({"command": _FILL_DISK, "workdir": ""})
            assert "No space left on device" in obs["output"], obs["output"]
            obs, info = env.reset(options={"task": task})
            assert info["task"] == task and info["score"] < 1.0
            after_fill = env.step({"command": _LISTING, "workdir": ""})[0]["output"]
            obs, *_ = env.step({"command": "git status --short"})
            assert int(obs["exit_code"]) == 0 and obs["output"] == "", obs["output"]
            env.reset(options={"task": task})
            assert after_fill == env.step({"command": _LISTING, "workdir": ""})[0]["output"]
            assert "/f1\n" not in after_fill and "./work/" in after_fill, after_fill
    finally:
        env.close()
