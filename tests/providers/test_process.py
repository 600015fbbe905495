"""The process provider's own lifecycle (its isolation: test_cgroup.py, test_tmpfs.py)."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import openenv_gym  # noqa: F401  (registers the ids)
from openenv_gym.errors import InvalidRequestError, WorkerError
from openenv_gym.providers import base
from openenv_gym.providers._runtime import OWNER_FILE, runtime_dir
from openenv_gym.providers.process import ProcessProvider
from tests.conftest import ctrl_c_after
from tests.providers.conftest import descendants, running, wait_gone
from tests.providers.ignore_term_env import ENV_ID as IGNORE_TERM
from tests.security.helpers import fork_servers_of, wait_until, workers_of


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_a_worker_that_does_not_serve_in_time_is_ended_not_left_running(fork: bool) -> None:
    before = descendants(os.getpid())
    with pytest.raises(WorkerError):
        # Far less than a Python start, and than a fork's start-up (~20 ms for Echo).
        ProcessProvider(startup_timeout=0.002, fork=fork).start("echo")
    started = descendants(os.getpid()) - before - fork_servers_of(os.getpid())
    assert not wait_gone(started, 10), "the worker that timed out at start still runs"


def _tgkill(pid: int, tid: int, sig: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(234, pid, tid, sig) != 0:  # SYS_tgkill on x86-64: Python has no wrapper
        raise OSError(ctypes.get_errno(), "tgkill")


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the tgkill syscall number is x86-64's")
def test_sigterm_taken_by_a_worker_thread_still_stops_the_worker_cleanly() -> None:
    # The kernel may hand a process-wide SIGTERM to any thread. Python runs the handler on
    # the main thread only, and a main thread asleep on a lock is not woken: the worker must
    # still notice, and shut down cleanly (exit 0) rather than wait for the SIGKILL.
    provider = ProcessProvider()
    [worker] = provider.start("coding")
    try:
        pid = worker.pid

        def server_threads() -> list[int]:
            return [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]

        # A worker counts as started once its socket listens, a moment before its threads run.
        assert wait_until(lambda: bool(server_threads()), 10), "the Coding worker runs no server thread"
        _tgkill(pid, server_threads()[0], signal.SIGTERM)
        try:
            worker.proc.wait(10.0)
        except subprocess.TimeoutExpired:
            pytest.fail("the worker ignored SIGTERM")
        assert worker.exit_reason() == "exited with code 0"
    finally:
        provider.stop_all([worker])


def test_ctrl_c_while_workers_start_leaves_none_running() -> None:
    # In a notebook, an interrupted gym.make_vec must not leave its workers running until the
    # kernel exits: the starts still in flight are waited for and stopped.
    before = workers_of(os.getpid())
    with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.1):
        ProcessProvider(fork=False).start("echo", 4)  # four interpreters: well past 0.1 s
    assert workers_of(os.getpid()) - before == set()


def test_workers_never_closed_are_stopped_at_exit_quietly_with_their_folder() -> None:
    # A script that ends without close(): the finalizers stop the workers at interpreter
    # exit, when no thread pool may start, and remove the workers' folder.
    import sys

    script = ("import gymnasium as gym, openenv_gym\n"
              "envs = gym.make_vec('OpenEnv/Echo-v0', num_envs=4, envs_per_worker=2, provider='process')\n"
              "envs.reset(seed=0)\n"
              "pool = envs.pool\n"
              "print(pool.workers[0].folder, *(w.pid for w in pool.workers))\n")
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    folder, *pids = done.stdout.split()
    assert len(pids) == 2 and not wait_gone({int(p) for p in pids})
    assert not os.path.exists(folder)


def test_provider_options_are_checked_against_the_provider() -> None:
    from openenv_gym.providers import get_provider

    with pytest.raises(TypeError, match=r"\['frok'\] are not options of the process provider; it takes: .*fork"):
        get_provider("process", frok=False)
    # With auto, options are written for whichever provider it picks: the other one's pass.
    provider = get_provider("auto", fork=False, auto_build=True)
    assert provider.name in ("docker", "process")
    if provider.name == "process":
        assert provider.fork is False
    # Refused under auto, the message lists both providers' options: the user wrote for either.
    with pytest.raises(TypeError, match=r"\['frok'\] are options of neither") as refused:
        get_provider("auto", frok=False)
    assert "fork" in str(refused.value) and "auto_build" in str(refused.value)


def test_a_socket_path_too_long_to_connect_to_is_refused_naming_tmpdir(provider: str, tmp_path) -> None:
    # Unix socket addresses hold 107 bytes: a long TMPDIR (pytest's own tmp_path, say) made
    # the docker provider wait its whole startup timeout for a worker that was ready.
    tmpdir = tmp_path / ("t" * 100)
    tmpdir.mkdir()
    script = ("import gymnasium as gym, openenv_gym\n"
              "from openenv_gym.errors import ProviderUnavailableError\n"
              "try:\n"
              f"    gym.make('OpenEnv/Echo-v0', provider={provider!r})\n"
              "except ProviderUnavailableError as exc:\n"
              "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, TMPDIR=str(tmpdir)))
    assert "longer than the 107 a Unix socket address holds; set TMPDIR" in out.stdout, out.stderr[-2000:]
    assert os.listdir(tmpdir / f"openenv-gym-{os.getuid()}") == []  # nothing left behind


def test_sandboxes_of_a_worker_killed_without_a_tmpfs_go_with_its_pool(tmp_path, monkeypatch) -> None:
    # A non-root trainer gets no private tmpfs (private_tmp=False stands for that here, as
    # root). A Coding worker killed by SIGKILL (the OOM killer, a stop past its grace)
    # cleans nothing up: its sandbox folder must not stay in $TMPDIR for good.
    import gymnasium as gym
    import tempfile

    import openenv_gym  # noqa: F401

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    env = gym.make("OpenEnv/Coding-v0", provider="process", provider_options={"private_tmp": False})
    try:
        env.reset()
        obs, *_ = env.step({"code": "import os; print(os.getcwd())"})
        sandbox = obs["stdout"].strip().rsplit("/runs/", 1)[0]  # the env's folder (runs/ is emptied)
        assert sandbox and os.path.isdir(sandbox)
        [pid] = workers_of(os.getpid()) - fork_servers_of(os.getpid())
        os.kill(pid, signal.SIGKILL)
        assert not wait_gone({pid})
        env.reset()  # a new worker replaces it
    finally:
        env.close()
    leftover = [p for p in os.listdir(tmp_path) if not p.startswith("openenv-gym-")]
    assert not leftover, leftover
    assert not os.path.exists(sandbox)


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_ctrl_c_while_stop_waits_for_a_stuck_worker_still_kills_it(fork: bool) -> None:
    # close() on a worker that ignores SIGTERM (a deadlocked env) waits its grace, then
    # SIGKILLs it. A user who presses Ctrl-C during that wait must not be left with a worker
    # no close() will ever stop again (the finalizer ran), nor its folder. (A SIGSTOPped
    # worker no longer stands in: a stop resumes it, and it ends within the grace.)
    provider = ProcessProvider(fork=fork)
    [worker] = provider.start("gym", 1, {"env_id": f"tests.providers.ignore_term_env:{IGNORE_TERM}"})
    pid, folder = worker.pid, worker.folder
    try:
        with pytest.raises(KeyboardInterrupt), ctrl_c_after(0.5):
            provider.stop_all([worker])  # grace: 2 s
        assert not wait_gone({pid}, 10), "the stuck worker still runs after an interrupted stop"
        assert not os.path.exists(folder)
    finally:
        worker.stop()


@pytest.mark.parametrize("env", ["coding", "git"])
def test_an_untrusted_worker_that_fails_to_start_leaves_no_folder(env: str) -> None:
    # Its temp folder (w0.tmp) kept the pool folder from being removed: one more per retry.
    def mine() -> set[str]:
        return {e for e in os.listdir(runtime_dir()) if e.startswith(f"{os.getpid()}-")}

    before = mine()
    with pytest.raises(InvalidRequestError):
        ProcessProvider().start(env, 1, {"no_such_argument": 1})
    assert mine() - before == set()


def test_a_worker_restarts_after_its_folder_was_removed() -> None:
    # rm -rf /tmp/* or a tmp cleaner took the pool folder while workers ran: each restart
    # then failed on the log file it opens there, and training stopped.
    envs = gym.make_vec("OpenEnv/Gym-v0", 2, env_id="CartPole-v1", provider="process",
                        envs_per_worker=1, on_worker_error="restart")
    try:
        envs.reset(seed=0)
        worker = envs.unwrapped.workers[0]
        shutil.rmtree(worker.folder)
        os.kill(worker.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while worker.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        _, _, _, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
        assert truncated[0] and infos["worker_restarted"][0]
        envs.step(np.zeros(2, dtype=np.int64))  # next-step autoreset of the fresh episode
        _, rewards, _, _, infos = envs.step(np.zeros(2, dtype=np.int64))  # the fresh worker serves
        assert rewards.tolist() == [1.0, 1.0] and "worker_error" not in infos
        # With its owner file: a sweep judges the folder by its owner, not by a bare pid.
        assert os.path.exists(os.path.join(worker.folder, OWNER_FILE))
    finally:
        envs.close()


_TRAIN = textwrap.dedent("""
    import gymnasium as gym
    import openenv_gym
    for fork in (True, False):
        env = gym.make("OpenEnv/Gym-v0", env_id="beside_script:Const", provider="process",
                       provider_options={"fork": fork})
        obs, info = env.reset(seed=0)
        print("ok", float(obs[0]))
        env.close()
""")

_BESIDE = textwrap.dedent("""
    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces

    class Const(gym.Env):
        observation_space = spaces.Box(0, 2, (1,), np.float32)
        action_space = spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.full(1, 1.5, np.float32), {}

        def step(self, action):
            return np.zeros(1, np.float32), 0.0, True, False, {}

    gym.register("Const", entry_point=Const)
""")


@pytest.mark.parametrize("shadowed", ["numpy", "queue"])
def test_a_worker_imports_from_the_trainer_s_script_folder_not_its_current_one(
        tmp_path: Path, shadowed: str) -> None:
    # python -m put the trainer's current folder first on every worker's path: a numpy.py
    # lying there (that the trainer, run as a script from elsewhere, never imports) killed
    # every worker at start, or ran as the trainer's user; and an env module beside the
    # script imported in the trainer but not in its workers.
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "train.py").write_text(_TRAIN)
    (project / "beside_script.py").write_text(_BESIDE)
    (elsewhere / f"{shadowed}.py").write_text("raise SystemExit('imported from the current folder')\n")
    out = subprocess.run([sys.executable, str(project / "train.py")], cwd=elsewhere,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "1.5", "ok", "1.5"]


_TRAIN_PATHS = textwrap.dedent("""
    import sys
    sys.path.insert(0, {front!r})   # as pytest's rootdir conftest, or a script finding its project
    sys.path.append({tail!r})
    import front_env, tail_env      # the trainer imports both
    import gymnasium as gym
    import openenv_gym
    for module in ("front_env", "tail_env"):
        for fork in (True, False):
            env = gym.make("OpenEnv/Gym-v0", env_id=module + ":Const", provider="process",
                           provider_options={{"fork": fork}})
            obs, info = env.reset(seed=0)
            print("ok", float(obs[0]))
            env.close()
""")


def test_a_worker_imports_from_the_folders_the_trainer_put_on_its_path(tmp_path: Path) -> None:
    scripts, front, tail, elsewhere = (tmp_path / n for n in ("scripts", "front", "tail", "elsewhere"))
    for folder in (scripts, front, tail, elsewhere):
        folder.mkdir()
    (front / "front_env.py").write_text(_BESIDE)
    (tail / "tail_env.py").write_text(_BESIDE)
    (scripts / "train.py").write_text(_TRAIN_PATHS.format(front=str(front), tail=str(tail)))
    # Still nothing from the folder the trainer merely started in.
    (elsewhere / "numpy.py").write_text("raise SystemExit('imported from the current folder')\n")
    out = subprocess.run([sys.executable, str(scripts / "train.py")], cwd=elsewhere,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "1.5"] * 4


def test_pytest_run_trainer_s_rootdir_reaches_its_workers(tmp_path: Path) -> None:
    # `pytest` from a project root whose conftest.py makes the root importable: the tests
    # import the project's env module, and so must the workers they start.
    (tmp_path / "conftest.py").write_text("")
    (tmp_path / "myenvs.py").write_text(_BESIDE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_it.py").write_text(textwrap.dedent("""
        import gymnasium as gym
        import openenv_gym

        def test_it():
            import myenvs  # noqa: F401
            env = gym.make("OpenEnv/Gym-v0", env_id="myenvs:Const", provider="process")
            try:
                assert float(env.reset(seed=0)[0][0]) == 1.5
            finally:
                env.close()
    """))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/test_it.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


_TRAIN_ECHO = textwrap.dedent("""
    import gymnasium as gym
    import openenv_gym
    for fork in (True, False):
        env = gym.make("OpenEnv/Echo-v0", provider="process", provider_options={"fork": fork})
        env.reset(seed=0)
        print("ok")
        env.close()
""")


@pytest.mark.parametrize("module", ["random", "types", "enum"])
def test_a_stdlib_named_module_beside_the_script_does_not_kill_workers(tmp_path: Path, module: str) -> None:
    # Python puts a script's folder on sys.path after its startup (site, .pth files), which
    # imports random, types, enum...: the trainer runs with a random.py beside train.py, and
    # so must its workers (a folder on PYTHONPATH is searched during that startup already).
    (tmp_path / "train.py").write_text(_TRAIN_ECHO)
    (tmp_path / f"{module}.py").write_text(f"raise SystemExit('imported the script folder\\'s {module}.py')\n")
    out = subprocess.run([sys.executable, str(tmp_path / "train.py")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "ok"]


# Ctrl-C anywhere in a provider's fan-out of starts or stops leaves no worker running. The
# interrupt reaches the main thread wherever it is: inside submit() (the start or stop already
# queued, or not yet handed out) or while the threads are joined. A ThreadPoolExecutor that
# raises it at those exact points stands in for the timing of a real Ctrl-C.
def _interrupting_executor(where: str, at_call: int = 2) -> type[ThreadPoolExecutor]:
    """A ThreadPoolExecutor that raises KeyboardInterrupt once: in its ``at_call``-th submit(),
    after queuing it (``where="submit"``), or in its first shutdown(), after the join."""

    class Interrupting(ThreadPoolExecutor):
        made: list[ThreadPoolExecutor] = []
        calls = 0

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            Interrupting.made.append(self)

        def submit(self, *args, **kwargs):
            future = super().submit(*args, **kwargs)
            Interrupting.calls += where == "submit"
            if where == "submit" and Interrupting.calls == at_call:
                raise KeyboardInterrupt
            return future

        def shutdown(self, wait: bool = True, **kwargs) -> None:
            super().shutdown(wait, **kwargs)
            if where == "shutdown" and not Interrupting.calls:
                Interrupting.calls += 1
                raise KeyboardInterrupt

    return Interrupting


@pytest.mark.parametrize("where", ["submit", "shutdown"])
def test_ctrl_c_anywhere_in_the_start_fan_out_leaves_no_worker(monkeypatch, where: str) -> None:
    me = os.getpid()
    before = workers_of(me)
    executor = _interrupting_executor(where)
    monkeypatch.setattr(base, "ThreadPoolExecutor", executor)
    try:
        with pytest.raises(KeyboardInterrupt):
            ProcessProvider().start("echo", 3)
    finally:
        monkeypatch.undo()
        for ex in executor.made:  # starts the interrupt left in flight have ended
            ex.shutdown(wait=True)
    started = workers_of(me) - before - fork_servers_of(me)
    try:
        assert not wait_gone(started, 10), "a start interrupted with Ctrl-C left workers running"
    finally:
        for pid in running(started):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_while_the_stops_are_handed_out_still_stops_every_worker(monkeypatch) -> None:
    # close() runs the pool's finalizer once: a stop never handed to a thread would leave
    # its worker running until the process exits (a notebook's kernel), and close() again
    # does nothing.
    provider = ProcessProvider()
    workers = provider.start("echo", 3)
    pids = {w.pid for w in workers}
    monkeypatch.setattr(base, "ThreadPoolExecutor", _interrupting_executor("submit"))
    try:
        with pytest.raises(KeyboardInterrupt):
            provider.stop_all(workers)
        monkeypatch.undo()
        assert not wait_gone(pids, 10), "workers whose stop was never handed out still run"
    finally:
        monkeypatch.undo()
        provider.stop_all(workers)
