"""Soak of the LLM-agent workloads: Coding-v0, Git-v0, the TRL EnvPool, a make_vec of Coding.

Runs the four workloads at once, on one provider, for --seconds, and samples every
--every seconds: the trainer's RSS/fds/threads; per worker its RSS, fds, threads, live
descendants, zombie descendants, memfds, files and KiB in its temp folder (process: its
private tmpfs, seen through /proc/PID/root; docker: the container's /tmp, likewise); the
project's containers/workers of this trainer; reset/step latency medians per interval.

Run: ``python benchmarks/bench_soak_agents.py --provider process --seconds 180 --every 10 --out soak.jsonl``
(one JSON line per sample, then a summary line with the errors and what was left; exit 1 on any
error). Docker: build the images first (``openenv-gym build coding git``) or the window goes on
the build.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
import traceback
from collections import defaultdict
from typing import Any, Callable

import gymnasium as gym
import numpy as np

# The leak probes of the security suite (/proc readers, our containers by label).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import openenv_gym  # noqa: F401,E402
from openenv_gym.envs.coding.humaneval import get_problem  # noqa: E402
from openenv_gym.trl import EnvPool, EpisodeJob  # noqa: E402
from tests.security import helpers  # noqa: E402

from _results import require_docker  # noqa: E402  (benchmarks/_results.py)

ME = os.getpid()
STOP = threading.Event()
LAT: dict[str, list[float]] = defaultdict(list)
LAT_LOCK = threading.Lock()
COUNTS: dict[str, int] = defaultdict(int)
ERRORS: list[str] = []
#: workload name -> callable returning its current workers
WORKERS: dict[str, Callable[[], list[Any]]] = {}

CODES = [
    "print('ok')\n",                                                   # passes
    "assert 1 == 2, 'nope'\n",                                         # fails
    "raise ValueError('boom')\n",                                      # exception
    "for i in range(2000):\n    print(i, 'x' * 20)\n",               # prints
    "import os\nos.makedirs('d/e', exist_ok=True)\n"                   # files in its folder
    "for i in range(20):\n    open(f'd/e/f{i}.bin', 'wb').write(os.urandom(8192))\n"
    "open('../escaped.txt', 'w').write('x' * 100000)\nprint(len(os.listdir('d/e')))\n",
    "import subprocess\np = subprocess.Popen(['sleep', '300'])\nprint(p.pid)\n",  # child left
    "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
    "        time.sleep(300)\n    os._exit(0)\nprint('daemon')\n",   # daemon left
    "import sys\nsys.stderr.write('e' * 5000)\nsys.exit(3)\n",
]


def timed(kind: str, fn: Callable[[], Any]) -> Any:
    """``fn()``, its latency noted under ``kind`` for the next sample."""
    t = time.perf_counter()
    out = fn()
    with LAT_LOCK:
        LAT[kind].append(time.perf_counter() - t)
        COUNTS[kind] += 1
    return out


def guard(name: str, body: Callable[[], None]) -> Callable[[], None]:
    """``body`` for a loop's thread: an exception is noted as an error and stops every loop."""
    def run() -> None:
        try:
            body()
        except BaseException:
            ERRORS.append(f"{name}: {traceback.format_exc()[-1500:]}")
            STOP.set()
    return run


def coding_loop(provider: str) -> None:
    """One-shot Coding episodes of 0–3 steps of mixed code; passing code must score 1."""
    env = gym.make("OpenEnv/Coding-v0", provider=provider, env_kwargs={"step_timeout": 5.0})
    WORKERS["coding"] = lambda: [env.unwrapped.worker]
    rng = random.Random(0)
    try:
        while not STOP.is_set():
            timed("coding.reset", lambda: env.reset())
            for _ in range(rng.choice((0, 1, 3, 3))):  # some episodes end at once: more resets
                code = rng.choice(CODES)
                obs, r, *_ = timed("coding.step", lambda: env.step({"code": code}))
                if code == CODES[0] and r != 1.0:
                    ERRORS.append(f"coding: passing code scored {r}: {obs['stderr'][-300:]}")
    finally:
        env.close()


def coding_persistent_loop(provider: str) -> None:
    """Persistent (REPL) Coding episodes: state, then mixed code."""
    env = gym.make("OpenEnv/Coding-v0", provider=provider, persistent=True, env_kwargs={"step_timeout": 5.0})
    WORKERS["coding_repl"] = lambda: [env.unwrapped.worker]
    rng = random.Random(1)
    try:
        while not STOP.is_set():
            timed("repl.reset", lambda: env.reset())
            timed("repl.step", lambda: env.step({"code": "x = [0] * 1000\n"}))
            for _ in range(2):
                timed("repl.step", lambda: env.step({"code": rng.choice(CODES)}))
    finally:
        env.close()


def coding_task_loop(provider: str) -> None:
    """HumanEval episodes: a wrong answer, then the canonical one, which must score 1."""
    env = gym.make("OpenEnv/Coding-v0", provider=provider, task="humaneval", max_attempts=2)
    WORKERS["coding_task"] = lambda: [env.unwrapped.worker]
    i = 0
    try:
        while not STOP.is_set():
            obs, info = timed("task.reset", lambda: env.reset(options={"problem": i % 20}))
            good = get_problem(i % 20).canonical_solution
            timed("task.step", lambda: env.step({"code": "    return None\n"}))
            _, r, *_ = timed("task.step", lambda: env.step({"code": good}))
            if r != 1.0:
                ERRORS.append(f"task: canonical solution of {i % 20} scored {r}")
            i += 1
    finally:
        env.close()


GIT_CMDS = [
    "git switch -c feat-$RANDOM && echo $RANDOM > f.txt && git add f.txt && git commit -qm feat",
    "git switch main",
    "git checkout -b tmp-$RANDOM && git checkout -",
    "git definitely-not-a-command",
    "printf 'line %s\\n' $(seq 1 200) > big.txt && git add big.txt && git commit -qm big",
    "git push -q origin HEAD 2>&1 | tail -1; git log --oneline | wc -l",
    "git status --short; ls",
    "mkdir -p sub && for i in $(seq 1 30); do echo $i > sub/$i; done && git add -A && git commit -qm many",
    "(sleep 300 &) ; echo bg",
]


def git_loop(provider: str) -> None:
    """Git-v0 over its task suite: four commands of :data:`GIT_CMDS` per episode."""
    env = gym.make("OpenEnv/Git-v0", provider=provider, task="suite")
    WORKERS["git"] = lambda: [env.unwrapped.worker]
    rng = random.Random(2)
    try:
        while not STOP.is_set():
            timed("git.reset", lambda: env.reset())
            for _ in range(4):
                timed("git.step", lambda: env.step({"command": rng.choice(GIT_CMDS)}))
    finally:
        env.close()


def pool_loop(provider: str) -> None:
    """The TRL pool: ``run()`` of 4 jobs, then 4 leased episodes as a GRPO rollout drives them."""
    pool = EnvPool("coding", num_workers=2, provider=provider, episode_timeout=60)
    WORKERS["pool"] = lambda: list(pool.workers)
    rng = random.Random(3)
    n = 0
    try:
        while not STOP.is_set():
            jobs = [EpisodeJob([{"code": rng.choice(CODES)} for _ in range(2)]) for _ in range(4)]
            outs = timed("pool.run4", lambda: pool.run(jobs))
            for o in outs:
                if o.failure:
                    ERRORS.append(f"pool.run: {o.failure}: {o.message}")
            # externally driven episodes: open/reset/step/close each round (a GRPO rollout)
            eps = pool.open(4)
            timed("pool.reset_many", lambda: pool.reset_many(eps, [None] * 4, [None] * 4))
            timed("pool.step_many", lambda: pool.step_many(eps, [{"code": rng.choice(CODES)} for _ in eps]))
            pool.close_many(eps)
            n += 1
    finally:
        pool.close()


def vec_loop(provider: str) -> None:
    """A vector env of 4 Coding envs: steps of mixed code, a reset every third step."""
    envs = gym.make_vec("OpenEnv/Coding-v0", num_envs=4, provider=provider, env_kwargs={"step_timeout": 5.0})
    WORKERS["vec"] = lambda: list(envs.unwrapped.workers if hasattr(envs, "unwrapped") else envs.workers)
    rng = random.Random(4)
    try:
        envs.reset(seed=0)
        k = 0
        while not STOP.is_set():
            codes = [rng.choice(CODES) for _ in range(4)]
            _, _, _, trunc, infos = timed("vec.step", lambda: envs.step({"code": codes}))
            if "worker_restarted" in infos:
                ERRORS.append(f"vec: worker restarted: {infos.get('worker_error')}")
            k += 1
            if k % 3 == 0:
                timed("vec.reset", lambda: envs.reset())
    finally:
        envs.close()


# ------------------------------------------------------------------ sampling

def memfds(pid: int) -> int:
    """How many memfds ``pid`` holds open (-1: it is gone)."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:"):
                    n += 1
            except OSError:
                pass
    except OSError:
        return -1
    return n


def tree_usage(root: str) -> tuple[int, int]:
    """(files+dirs, KiB) under root."""
    n = kib = 0
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            n += 1
            try:
                kib += os.lstat(os.path.join(dirpath, name)).st_blocks // 2
            except OSError:
                pass
    return n, kib


def zombies_under(root: int) -> int:
    """Zombies whose parent is ``root`` or below it."""
    n = 0
    for pid in helpers.pids():
        st = helpers.proc_status(pid)
        if st.get("State", "")[:1] == "Z" and int(st.get("PPid", "0")) in ({root} | helpers.descendants(root)):
            n += 1
    return n


def worker_view(worker: Any, provider: str, docker_client: Any) -> dict[str, Any]:
    """pid of the env server, and the folder its sandboxes live in, seen from the host."""
    if provider == "process":
        pid = worker.pid
        tmp = f"/proc/{pid}/root{worker.tmp_path}"
        return {"pid": pid, "tmp": tmp, "root": pid}
    c = docker_client.containers.get(worker.container_id)
    init = c.attrs["State"]["Pid"]
    kids = [p for p in helpers.pids() if helpers.proc_status(p).get("PPid") == str(init)]
    server = kids[0] if kids else init
    return {"pid": server, "tmp": f"/proc/{init}/root/tmp", "root": init, "container": c}


def sample(provider: str, t0: float, docker_client: Any) -> dict[str, Any]:
    """One sample: the trainer, every loop's workers, latency medians since the last one."""
    row: dict[str, Any] = {"t": round(time.monotonic() - t0, 1)}
    row["trainer"] = {"rss_kib": helpers.rss_kib(ME), "fds": helpers.fd_count(ME), "threads": helpers.threads(ME)}
    with LAT_LOCK:
        lat = {k: v[:] for k, v in LAT.items()}
        for v in LAT.values():
            v.clear()
        row["counts"] = dict(COUNTS)
    row["lat_ms"] = {k: round(statistics.median(v) * 1e3, 1) for k, v in lat.items() if v}
    row["n_interval"] = {k: len(v) for k, v in lat.items()}
    workers: dict[str, Any] = {}
    for name, get in list(WORKERS.items()):
        for i, w in enumerate(get()):
            try:
                v = worker_view(w, provider, docker_client)
            except Exception as exc:  # restarting
                workers[f"{name}{i}"] = {"error": repr(exc)[:200]}
                continue
            pid = v["pid"]
            d = helpers.descendants(v["root"]) - {pid}
            files, kib = tree_usage(v["tmp"])
            info = {"pid": pid, "rss_kib": helpers.rss_kib(pid), "fds": helpers.fd_count(pid),
                    "threads": helpers.threads(pid), "desc": len(d), "zombies": zombies_under(v["root"]),
                    "memfds": memfds(pid), "tmp_files": files, "tmp_kib": kib,
                    "restarts": getattr(w, "restarts", 0)}
            if provider == "docker":
                st = v["container"].stats(stream=False)
                info["mem_usage_kib"] = st.get("memory_stats", {}).get("usage", 0) >> 10
                info["pids_current"] = st.get("pids_stats", {}).get("current")
            if name == "git":  # what fills the git root: snapshots, env folders, trash
                tops: dict[str, int] = defaultdict(int)
                for dirpath, dirs, files in os.walk(v["tmp"]):
                    rel = os.path.relpath(dirpath, v["tmp"]).split(os.sep)
                    key = rel[1].split("-")[0] if len(rel) > 1 else "."
                    tops[key] += len(dirs) + len(files)
                info["by_top"] = dict(tops)
            workers[f"{name}{i}"] = info
    row["workers"] = workers
    if provider == "process":
        row["owned_workers"] = len(helpers.workers_of(ME))
    else:
        row["owned_containers"] = len(helpers.our_containers(docker_client, ME))
    return row


def main() -> int:
    """Run the loops, print a sample every ``--every`` s and a summary; 1 on any error."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--provider", default="process", choices=("process", "docker"))
    ap.add_argument("--seconds", type=float, default=180, help="how long the loops run")
    ap.add_argument("--every", type=float, default=10, help="seconds between samples")
    ap.add_argument("--out", default="-", help="JSON lines file (-: stdout)")
    ap.add_argument("--only", default="coding,coding_repl,coding_task,git,pool,vec",
                    help="comma-separated loops to run")
    args = ap.parse_args()
    loops = {"coding": coding_loop, "coding_repl": coding_persistent_loop, "coding_task": coding_task_loop,
             "git": git_loop, "pool": pool_loop, "vec": vec_loop}
    if args.provider == "docker":  # the reason now, not each loop's traceback in its thread
        require_docker("bench_soak_agents.py --provider docker", instead="pass --provider process")
    docker_client = helpers.docker_client() if args.provider == "docker" else None
    threads = [threading.Thread(target=guard(n, lambda f=loops[n]: f(args.provider)), name=n)
               for n in args.only.split(",")]
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    t0 = time.monotonic()
    for t in threads:
        t.start()
    try:
        while time.monotonic() - t0 < args.seconds and not STOP.is_set():
            STOP.wait(args.every)
            row = sample(args.provider, t0, docker_client)
            print(json.dumps(row), file=out, flush=True)
    finally:
        STOP.set()
        for t in threads:
            t.join(120)
    time.sleep(3)
    end = {"end": True, "errors": ERRORS[:20], "n_errors": len(ERRORS), "counts": dict(COUNTS),
           "owned_workers_after": len(helpers.workers_of(ME)) if args.provider == "process" else None,
           "owned_containers_after": len(helpers.our_containers(docker_client, ME)) if docker_client else None,
           "trainer": {"rss_kib": helpers.rss_kib(ME), "fds": helpers.fd_count(ME), "threads": helpers.threads(ME)}}
    print(json.dumps(end), file=out, flush=True)
    if out is not sys.stdout:
        out.close()
    return 1 if ERRORS else 0


if __name__ == "__main__":
    sys.exit(main())
