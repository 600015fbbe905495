"""Hostile shell commands sent through ``OpenEnv/Git-v0`` (free-form), on both providers.

The Git env runs each command with bash in a child of its own session, with rlimits, a
deadline and Landlock (the same runner as Coding-v0). Attacks the process provider cannot
stop run on Docker only, as in ``test_attacks.py``; those that inspect Docker's own layer
through /proc run with Landlock off, which keeps /proc closed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import time
from typing import Any, Callable, Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401
from openenv_gym.envs._confine import abi as landlock_abi
from openenv_gym.errors import OpenEnvError, WorkerError
from tests.conftest import SIGNAL_EVERY_THREAD, require_docker
from tests.security import helpers
from tests.security.helpers import HostProbe, record

DOCKER_ONLY = "only Docker isolates this (the process provider shares the host's {})"


def _timed_out(obs: Any) -> str:
    assert isinstance(obs, dict) and obs["timed_out"], obs
    return "killed at the deadline"


def _output(*wanted: str) -> Callable[[Any], str]:
    def check(obs: Any) -> str:
        assert isinstance(obs, dict), obs
        for w in wanted:
            assert w in obs["output"], (w, obs["output"][-500:])
        return "; ".join(wanted)
    return check


def _capped(obs: Any) -> str:
    assert isinstance(obs, dict) and len(obs["output"]) < 70_000 and "truncated" in obs["output"], obs
    return f"output capped at {len(obs['output'])} chars"


def _worker_error(outcome: Any) -> str:
    assert isinstance(outcome, WorkerError), outcome
    return f"{type(outcome).__name__} on the client"


#: Landlock ABI 6 (Linux 6.12) scopes signals: a confined command cannot signal its worker.
SIGNALS_SCOPED = landlock_abi() >= 6
NO_LANDLOCK = "this kernel has no Landlock" if landlock_abi() < 1 else None

#: A clean filter, set in the agent's repository, that git runs when a check calls `git
#: status` on a touched file: it tries to write outside the workspace and says how it went.
FILTER = """git config filter.evil.clean 'sh -c "(echo x > /tmp/openenv-gym-filter-pwned && echo escaped \\
  || echo held) > ../filter-result.txt; cat"'
echo '* filter=evil' > .gitattributes
touch README.md
echo armed"""


def _daemon_gone(obs: Any) -> str:
    """The step has returned: the daemon it left (re-parented to the worker) must be dead."""
    assert isinstance(obs, dict) and "started home=" in obs["output"], obs
    home = obs["output"].split("home=", 1)[1].strip()
    lingering = helpers.processes_with_home_under(home)
    assert not lingering, f"the daemon outlived its step: {lingering}"
    return "killed when the step ended (the worker adopts its orphans)"


@contextlib.contextmanager
def _must_not_appear(marker: str) -> Iterator[None]:
    """The attack inside must not write ``marker`` on the host (removed if it did)."""
    try:
        yield
        assert not os.path.exists(marker), f"the attack wrote {marker} on the host"
    finally:
        if os.path.exists(marker):
            os.unlink(marker)


def _signal_refused(outcome: Any) -> str:
    if not SIGNALS_SCOPED:
        return _worker_error(outcome)
    return _output("Operation not permitted")(outcome) + " (Landlock signal scope)"


# (name, command, timeout, check, process skip reason, worker dies, confined)
GIT_ATTACKS: list[tuple[str, str, float, Callable[[Any], str], str | None, bool, bool]] = [
    ("shell fork bomb", ":(){ :|:& };:", 2.0, lambda obs: "step ended: " + (
        "timed out" if obs["timed_out"] else f"exit {obs['exit_code']}"),
     helpers.fork_bomb_skip("root ignores RLIMIT_NPROC"), False, True),
    ("sleep past the timeout", "sleep 3600", 1.0, _timed_out, None, False, True),
    ("output flood (yes)", "yes openenv", 3.0, _capped, None, False, True),
    ("writes to /etc, /usr and /tmp", "echo x > /etc/openenv-gym-pwned; echo etc=$?; "
     "echo x > /usr/openenv-gym-pwned; echo usr=$?; echo x > /tmp/openenv-gym-pwned; echo tmp=$?",
     3.0, _output("etc=1", "usr=1", "tmp=1"), NO_LANDLOCK, False, True),
    ("read host files (home, /tmp)", "cat ~root/.bashrc /etc/hostname >/dev/null 2>&1; echo home=$?; "
     "ls /tmp >/dev/null 2>&1; echo tmp=$?", 3.0, _output("home=1", "tmp=2"), NO_LANDLOCK, False, True),
    ("TCP to a loopback service (bash /dev/tcp)", "exec 3<>/dev/tcp/127.0.0.1/__PORT__ && echo tcp=open "
     "|| echo tcp=refused", 3.0, _output("tcp=refused"),
     NO_LANDLOCK if landlock_abi() >= 4 else "TCP rules need Landlock ABI 4 (Linux 6.7)", False, True),
    ("Unix socket on the host (python3)", "python3 -c \"import socket; socket.socket(socket.AF_UNIX)"
     ".connect('__UNIX__')\" 2>&1 | tail -1", 5.0, _output("PermissionError"), NO_LANDLOCK, False, True),
    ("network and DNS", "echo routes=$(tail -n +2 /proc/net/route | wc -l); "
     "getent hosts pypi.org >/dev/null && echo dns=resolved || echo dns=fails", 5.0,
     _output("routes=0", "dns=fails"), DOCKER_ONLY.format("network"), False, False),
    ("setsid daemon", "setsid sleep 600 > /dev/null 2>&1 < /dev/null & sleep 0.2; echo started home=$HOME",
     3.0, _daemon_gone, None, False, True),
    ("kill the env server ($PPID)", "kill -9 $PPID", 3.0, _signal_refused, None, not SIGNALS_SCOPED, True),
    # Landlock scopes signals by the target *thread*'s domain: the thread that starts a
    # command must not be in the command's (it was: tgkill on it ended the worker).
    ("kill the env server, thread by thread (tgkill)", "W=$PPID python3 -c \"" + SIGNAL_EVERY_THREAD + "\"", 8.0,
     _output("reached=0") if SIGNALS_SCOPED else _worker_error, None, not SIGNALS_SCOPED, True),
]


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def git_envs(request: pytest.FixtureRequest) -> Iterator[dict[bool, tuple[str, gym.Env]]]:
    """Per provider, a confined env and (made on first use) one with Landlock off."""
    if request.param == "docker":
        require_docker()
    envs = helpers.EnvsByConfine("OpenEnv/Git-v0", request.param, step_timeout=3.0, max_timeout=10.0,
                                 timeout=30.0)
    yield envs
    envs.close()


@pytest.mark.parametrize("attack", GIT_ATTACKS, ids=[a[0] for a in GIT_ATTACKS])
def test_git_command_attack(git_envs: dict[bool, tuple[str, gym.Env]], attack) -> None:
    name, command, timeout, check, process_skip, dies, confine = attack
    provider, env = git_envs[confine]
    if provider == "process" and process_skip:
        pytest.skip(process_skip)
    probe = HostProbe.take()
    env.reset()
    worker = env.unwrapped.worker
    restarts = worker.restarts
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener, \
                tempfile.TemporaryDirectory() as folder, socket.socket(socket.AF_UNIX) as unix:
            # Services a command tries to reach (in a container: its own loopback, no such path).
            unix.bind(os.path.join(folder, "service.sock"))
            unix.listen()
            command = (command.replace("__PORT__", str(listener.getsockname()[1]))
                       .replace("__UNIX__", unix.getsockname()))
            outcome: Any = env.step({"command": command, "timeout": timeout})[0]
    except OpenEnvError as exc:
        outcome = exc
    observed = check(outcome)
    start = time.monotonic()
    env.reset()
    obs, *_ = env.step({"command": "echo ok"})
    took = time.monotonic() - start
    assert obs["output"].strip().endswith("ok"), obs
    assert (worker.restarts > restarts) == dies
    assert not probe.problems(), probe.problems()
    if not confine:
        name += ", Landlock off (Docker's own layer)"
    record("attacks", f"Git-v0 command: {name}", "typed outcome; host unaffected; next episode works",
           f"{observed}; {'worker replaced' if dies else 'worker survived'}, next episode OK after "
           f"{took:.2f} s", provider)


@pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock")
def test_a_clean_filter_in_the_agents_repo_runs_confined_during_the_checks(
        git_envs: dict[bool, tuple[str, gym.Env]]) -> None:
    """The checks run `git status` on the agent's repository, whose config can name a
    program for git to run. Unconfined, that program wrote to the host's /tmp."""
    provider, env = git_envs[True]
    with _must_not_appear("/tmp/openenv-gym-filter-pwned"):
        env.reset(options={"task": "commit-file"})
        obs, *_ = env.step({"command": FILTER})
        assert "armed" in obs["output"], obs
        obs, *_ = env.step({"command": "cat ../filter-result.txt"})
        assert obs["output"].strip() == "held", obs["output"]  # it ran (the checks ran it), held
    record("attacks", "Git-v0: a clean filter in the agent's repo, run by the checks' git status",
           "the filter runs confined: no write outside the workspace",
           "filter ran during the checks; its write to /tmp was refused", provider)


#: A bare repo's config naming a command git runs when it advertises an alternate's refs,
#: which the git server's backend does on every push.
ALTERNATE_REFS = r"""git clone -q "$REMOTE/origin.git" r 2>/dev/null; cd r && echo a > f && git add f && git commit -qm one
git push -q origin main
git init -q --bare ../other.git
echo "$(cd ../other.git && pwd)/objects" > "$REMOTES/origin.git/objects/info/alternates"
git -C "$REMOTES/origin.git" config core.alternateRefsCommand \
  "sh -c '(echo x > /tmp/openenv-gym-alt-pwned && echo escaped || echo held) > $REMOTES/../alt-result.txt; cat >/dev/null'"
echo b > f && git commit -qam two && git push -q origin main 2>/dev/null; echo pushed=$?
cat "$REMOTES/../alt-result.txt" """


def test_a_command_in_the_agents_remote_runs_confined_when_the_server_serves_a_push(
        git_envs: dict[bool, tuple[str, gym.Env]]) -> None:
    """Unconfined, the git server's backend ran it in the worker: it wrote to the host's /tmp."""
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    provider, env = git_envs[True]
    with _must_not_appear("/tmp/openenv-gym-alt-pwned"):
        env.reset()
        obs, *_ = env.step({"command": ALTERNATE_REFS, "timeout": 8.0})
        assert "pushed=0" in obs["output"], obs["output"]
        assert obs["output"].rstrip().endswith("held"), obs["output"]  # it ran, confined
    record("attacks", "Git-v0: core.alternateRefsCommand in the agent's remote, run by the server on push",
           "the git server's backend runs it confined: no write outside the workspace",
           "it ran during the push; its write to /tmp was refused", provider)


#: ALTERNATE_REFS with the tgkill of every worker thread as the remote's command: $PPID is
#: expanded by the agent's shell, whose parent is the worker.
TGKILL_ON_PUSH = ALTERNATE_REFS.split("git -C")[0] + f"""cat > "$REMOTES/../tg.py" <<'PY'
{SIGNAL_EVERY_THREAD}
PY
git -C "$REMOTES/origin.git" config core.alternateRefsCommand \\
  "sh -c 'W=$PPID python3 $REMOTES/../tg.py > $REMOTES/../tg-result.txt 2>&1; cat >/dev/null'"
echo b > f && git commit -qam two && git push -q origin main 2>/dev/null; echo pushed=$?
cat "$REMOTES/../tg-result.txt" """


@pytest.mark.skipif(not SIGNALS_SCOPED, reason="Landlock scopes signals from ABI 6 (Linux 6.12)")
def test_a_command_the_server_runs_on_a_push_cannot_signal_the_worker(
        git_envs: dict[bool, tuple[str, gym.Env]]) -> None:
    """The git server's backend starts from a thread that has ended before it runs (as the
    agent's commands): a program of the agent's remote cannot reach any worker thread."""
    provider, env = git_envs[True]
    env.reset()
    obs, *_ = env.step({"command": TGKILL_ON_PUSH, "timeout": 8.0})
    assert "pushed=0" in obs["output"] and obs["output"].rstrip().endswith("reached=0"), obs["output"]
    obs, *_ = env.step({"command": "echo alive"})
    assert obs["output"] == "alive\n"
    record("attacks", "Git-v0: a program of the agent's remote, run on push, signals every worker thread "
           "(tgkill)", "no thread of the worker reachable (Landlock signal scope)",
           "it ran during the push and reached none; the worker survived", provider)


def test_the_git_server_serves_only_the_envs_own_remotes(git_envs: dict[bool, tuple[str, gym.Env]]) -> None:
    """Another env's remotes, or the snapshot every reset copies, must not be reachable: a
    push there would change other episodes."""
    provider, env = git_envs[True]
    env.reset()
    obs, *_ = env.step({"command": 'base=${REMOTE%/*/remotes}; git ls-remote -q "$REMOTE/origin.git"; echo own=$?; '
                                   'git ls-remote -q "$base/snapshot-free/remotes/origin.git" 2>/dev/null; '
                                   'echo snapshot=$?'})
    assert "own=0" in obs["output"] and "snapshot=128" in obs["output"], obs["output"]
    record("attacks", "Git-v0: reach another env's remotes or the task snapshot through the git server",
           "refused (404): the server serves live envs' own remotes only",
           "own remote served; the snapshot's refused", provider)


def test_files_that_would_hang_or_flood_the_checks_are_not_read(git_envs: dict[bool, tuple[str, gym.Env]]) -> None:
    """The checks read the agent's files in the worker: an endless file (a link to
    /dev/zero), a FIFO (an open that never returns) or a link to a host file must neither
    hang nor flood it, nor let a check see outside the repo."""
    provider, env = git_envs[True]
    env.reset(options={"task": "merge-conflict"})
    worker = env.unwrapped.worker
    restarts = worker.restarts
    obs, reward, *_ = env.step({"command": "rm app.py && ln -s /dev/zero app.py && mkfifo stuck && "
                                           "ln -s /etc/hostname other && echo planted"})
    assert "planted" in obs["output"], obs["output"]
    assert reward < 1.0  # app.py is no longer a file the checks can read
    obs, *_ = env.step({"command": "echo alive"})
    assert "alive" in obs["output"] and worker.restarts == restarts
    record("attacks", "Git-v0: a link to /dev/zero, a FIFO, a link to a host file where the checks read",
           "not read: no hang, no flood, nothing outside the repo", "checks ran and returned; worker survived",
           provider)


def test_a_program_the_server_runs_on_a_push_leaves_no_daemon(git_envs: dict[bool, tuple[str, gym.Env]]) -> None:
    """The git server's backend ran in the worker's own session: a program of the agent's
    remote config (core.alternateRefsCommand) sent to the background there was in no step's
    group, and the sweep of a step's orphans skips the worker's session, so it outlived the
    step and every later episode (and, without a worker cgroup, env.close())."""
    provider, env = git_envs[True]
    marker = f"sleep 61{os.getpid() % 1000}.5"
    command = ALTERNATE_REFS.replace(
        "sh -c '(echo x > /tmp/openenv-gym-alt-pwned && echo escaped || echo held) > $REMOTES/../alt-result.txt; "
        "cat >/dev/null'",
        f"sh -c '{marker} >/dev/null 2>&1 </dev/null & echo held > $REMOTES/../alt-result.txt; cat >/dev/null'")

    def daemons() -> list[int]:
        return [pid for pid in helpers.pids() if helpers.cmdline(pid)[:2] == marker.encode().split()]

    env.reset()
    try:
        obs, *_ = env.step({"command": command, "timeout": 8.0})
        assert "pushed=0" in obs["output"] and obs["output"].rstrip().endswith("held"), obs["output"]
        # A bound, not a speed: the daemon, if it survived, would sleep for hours; a SIGKILLed
        # one may take a while to exit on a loaded machine.
        helpers.wait_until(lambda: not daemons(), timeout=30.0)
        assert not daemons(), "a program the git server ran outlived the step"
    finally:
        for pid in daemons():
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
    record("attacks", "Git-v0: a daemon sent to the background by a program the server runs on a push",
           "killed with the backend's session when the request ends", "gone when the step returned", provider)
