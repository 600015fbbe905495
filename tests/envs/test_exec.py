"""envs._exec.Child: deadlines, exit codes and descriptors of real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from openenv_gym.envs._exec import Child, Limits, gate_line, held_start, python_argv, run
from openenv_gym.envs.coding.env import CodingEnv
from openenv_gym.envs.git.env import GitEnv

# Writes, closes its output, then lives on: its pipes reach EOF well before it exits.
_CLOSES_EARLY = ("import os, sys, time\nprint('before', flush=True)\nos.close(1); os.close(2)\n"
                 "time.sleep({sleep})\nsys.exit(3)")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_child_that_closes_its_output_is_waited_for_until_it_exits() -> None:
    result = run([sys.executable, "-c", _CLOSES_EARLY.format(sleep=0.3)], timeout=30.0)
    assert result.exit_code == 3 and result.stdout == "before\n" and not result.timed_out


def test_the_deadline_holds_for_a_child_with_no_output_open() -> None:
    child = Child([sys.executable, "-c", _CLOSES_EARLY.format(sleep=60)])
    assert child.pump(time.monotonic() + 1.0) is False  # still running at the deadline
    result = child.finish(timed_out=True)
    assert result.timed_out and result.exit_code == -9 and result.stdout == "before\n"


def test_no_descriptor_outlives_its_child() -> None:
    run([sys.executable, "-c", "pass"], timeout=30.0)  # imports and caches settle first
    before = _open_fds()
    for _ in range(10):
        run(["true"], timeout=30.0)
        child = Child(["sleep", "60"])
        child.finish()
    assert _open_fds() == before


def test_python_children_skip_site_hooks_but_import_installed_packages() -> None:
    script = "import sys, numpy\nprint(sys.flags.no_site, numpy.__name__)\nexit(3)"
    result = run(python_argv(Limits(), script), timeout=30.0)
    assert (result.exit_code, result.stdout) == (3, "1 numpy\n"), result.stderr


@pytest.mark.parametrize("make", [CodingEnv, GitEnv], ids=["coding", "git"])
def test_sandboxed_envs_check_their_timeouts_and_merge_limits_over_their_own_defaults(make) -> None:
    with pytest.raises(ValueError, match="0 < step_timeout <= max_timeout"):
        make(step_timeout=90, max_timeout=60)
    with pytest.raises(ValueError, match=r"unknown limits \['cpu'\]; known: \['cpu_seconds'"):
        make(limits={"cpu": 1})
    env = make(step_timeout=5, max_timeout=50, limits={"open_files": 64})
    try:
        assert (env.step_timeout, env.max_timeout) == (5.0, 50.0)
        # Git's step also runs its checks after the command (tests/envs/test_git_long_checks.py).
        assert env.max_step_seconds == (50.0 if isinstance(env, CodingEnv) else 50.0 + 10.0 + 60.0)
        limits = env.limits if isinstance(env, CodingEnv) else env.workspace.limits
        # The user's override, the env's own default, and the class default for the rest.
        assert limits.open_files == 64
        assert limits.memory_bytes == (1 << 30 if isinstance(env, CodingEnv) else 2 << 30)
        assert limits.file_size_bytes == Limits().file_size_bytes
    finally:
        env.close()


def test_the_process_budget_counts_threads_as_the_kernel_does() -> None:
    # RLIMIT_NPROC counts every task (thread) of the user. A budget added to the user's
    # processes alone left a child no fork at all once the user's threads outnumbered it
    # (16 Coding workers' own threads did; so do torch's or a browser's).
    import threading

    from openenv_gym.envs import _exec

    before = _exec._user_process_count()
    release = threading.Event()
    threads = [threading.Thread(target=release.wait) for _ in range(200)]
    for t in threads:
        t.start()
    try:
        assert _exec._user_process_count() - before >= 150  # other processes may come and go
    finally:
        release.set()
        for t in threads:
            t.join()


# reap_orphans: nothing a step started outlives it, even behind a process slow to die (a
# killed process with a big heap re-parents its children only once it is gone; the sweep
# stopped at the first pass that found nothing new, and they lived on).
# Runs in a child Python: adopt_orphans() makes the calling process a subreaper.
_SLOW_DYING_STEP = textwrap.dedent('''
    import os, sys, time
    from openenv_gym.envs._exec import adopt_orphans, run
    assert adopt_orphans()
    pidfile = sys.argv[1]
    # A (in the step's group) touches a big heap, so its SIGKILL takes a while to finish;
    # its child B leaves the group (setpgid) and stays A's child until A has died.
    step = f"""python3 -c '
    import os, sys, time
    heap = bytearray(1500 << 20)
    for i in range(0, len(heap), 4096):
        heap[i] = 1
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        time.sleep(60)
        os._exit(0)
    open("{pidfile}", "w").write(str(pid))
    time.sleep(60)
    ' &
    while [ ! -s {pidfile} ]; do sleep 0.05; done"""
    run(["bash", "-c", step], timeout=30)
    b = int(open(pidfile).read())
    try:
        os.kill(b, 0)
        with open(f"/proc/{b}/stat") as f:
            alive = f.read().split(") ")[1][0] != "Z"
    except ProcessLookupError:
        alive = False
    print("ALIVE" if alive else "GONE")
    if alive:
        os.kill(b, 9)
''')


@pytest.mark.parametrize("attempt", range(2))  # a race: twice makes a miss unlikely
def test_a_process_behind_a_slow_dying_one_does_not_outlive_the_step(tmp_path, attempt) -> None:
    out = subprocess.run([sys.executable, "-c", _SLOW_DYING_STEP, str(tmp_path / "pid")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "GONE", "a process of the step survived its orphan sweep"


# A held Python child (python_argv with a gate, as every Coding child is) runs nothing of its
# own before the gate opens: its Landlock domain may still hold the thread that started it.
_MARK = "import os\nopen(os.path.join({folder!r}, 'ran'), 'w').close()\nprint('ran')"


def _start_python(script: str):
    def start(gate: int) -> subprocess.Popen:
        return subprocess.Popen(python_argv(Limits(), script, gate=gate), pass_fds=(gate,),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return start


def test_a_held_python_child_runs_nothing_until_its_gate_opens(tmp_path) -> None:
    seen: list[bool] = []

    def spawn(start):  # as Ruleset.spawn_alone, with time for an ungated child to run
        proc = start()
        time.sleep(0.5)
        seen.append((tmp_path / "ran").exists() or proc.poll() is not None)
        return proc

    proc = held_start(_start_python(_MARK.format(folder=str(tmp_path))), spawn)
    out = proc.communicate(timeout=30)[0].decode()
    assert seen == [False], "the child ran before its gate opened"
    assert (proc.returncode, out) == (0, "ran\n"), out


def test_a_held_python_child_whose_gate_closes_unopened_exits_unrun(tmp_path) -> None:
    def spawn(start):  # the worker fails after the start: the gate closes unopened
        proc = start()
        raise RuntimeError(proc)

    with pytest.raises(RuntimeError) as raised:
        held_start(_start_python(_MARK.format(folder=str(tmp_path))), spawn)
    proc = raised.value.args[0]
    out = proc.communicate(timeout=30)[0].decode()
    assert (proc.returncode, out) == (125, "")
    assert not (tmp_path / "ran").exists()


def test_a_gate_is_kept_apart_from_the_descriptors_its_child_keeps() -> None:
    # CPython 3.11's close_fds falls back to closing every number up to the descriptor limit
    # one by one (~4 ms per confined child here) when two kept descriptors are adjacent, and
    # a gate pipe made right after the caller's own pipes landed next to one of them.
    kept, freed = os.pipe()
    os.close(freed)  # the next free number: where a gate pipe made now would start
    gates: list[int] = []

    def start(gate: int) -> subprocess.Popen:
        gates.append(gate)
        return subprocess.Popen(["bash", "-c", gate_line(gate) + "echo through"], pass_fds=(kept, gate),
                                stdout=subprocess.PIPE)

    before = _open_fds()
    try:
        proc = held_start(start, passed=(kept,))
        assert proc.communicate(timeout=30)[0] == b"through\n"  # the moved gate still opens
    finally:
        os.close(kept)
    assert abs(gates[0] - kept) > 1 and gates[0] != 3, (gates, kept)
    assert _open_fds() == before - 1  # the gate's copies are closed; only `kept` is gone


def test_no_descriptor_outlives_a_held_python_child() -> None:
    def held() -> Child:
        return Child(lambda gate: python_argv(Limits(), "import os; print(sorted(os.listdir('/proc/self/fd')))",
                                              gate=gate), held=True)

    held().finish()  # imports and caches settle first
    before = _open_fds()
    for _ in range(5):
        child = held()
        assert child.pump(time.monotonic() + 30.0)
        result = child.finish()
        # The gate is closed before the script runs: stdio and listdir's own descriptor only.
        assert (result.exit_code, result.stdout) == (0, "['0', '1', '2', '3']\n"), result.stderr
    assert _open_fds() == before
