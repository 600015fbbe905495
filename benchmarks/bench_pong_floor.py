"""Pong n=2: how close to ALE's C++ ``AtariVectorEnv`` a Python trainer over two worker
processes can get, and where the rest goes.

Six ways to step 2 preprocessed Pong envs (84×84 gray, 4-stack, noop 30, sticky actions
off), in interleaved blocks so the load of other users hits all alike:

- ``RemoteVectorEnv``: ``gym.make_vec("OpenEnv/Atari-v0", num_envs=2)``, the product.
- A bare loop over the same two workers: per step it writes the actions into the shared
  columns, sends each worker its constant 59-byte request, waits for both replies and copies
  the results out, with no checks, no error handling and no info merging. No trainer in
  Python over this topology can be faster, so it bounds what optimizing
  ``RemoteVectorEnv`` can still give.
- A bare loop over bare workers: two processes of this script's own, each stepping the same
  ``AtariEnv`` class the product's workers serve, woken by a tiny constant frame on a socket
  pair (waited for with the product's own frame reader, which polls before it sleeps),
  results in shared memory, under the same bare loop. Of the product's serving code only the
  frame reader runs (no dispatch, slice or session layers), so it bounds the design itself: a
  Python env step in a process per worker, on these 2 cores.
- Two envs in one process, no worker processes: the same two ``AtariEnv`` in this process,
  the second stepped on a thread of its own while this thread steps the first, as ALE's vector
  env steps its envs on threads. ale-py holds the GIL while it emulates, so this shows whether
  threads could stand in for a second process in Python (they cannot).
- ALE's ``AtariVectorEnv`` in one worker process: ALE's own vector env of two envs, stepped
  in a process of this script's own behind the bare workers' socket, frame reader and shared
  columns. It bounds any design that keeps the envs out of the trainer's process, whatever
  runs them: ALE's C++ step plus one process hop.
- ALE's ``AtariVectorEnv``: the same emulator, preprocessing in C++ threads, no isolation.

Two more rows split the distance between the first two: the product's pool and socket
layer (``WorkerPool.send_slices``/``receive_slices``: deadlines, failure handling) with only
the bare loop's copies; and that plus every piece of bookkeeping a correct usual step needs
(action checks, each worker's rewards, flags, frames and info columns copied out, autoreset
state, Gymnasium's batched info dict) as one straight loop, which falls back to nothing: it
raises on anything unusual, so it bounds what streamlining RemoteVectorEnv could give.

A second table times one env alone: the ``AtariEnv`` the workers serve, stepped in this
process with no vector env around it (a worker's env compute and nothing else), and ALE's
vector env with one env (its C++ step and one thread hand-off). What n=2 adds over one env
then splits the distance to ALE into the env's own cost and the cost of running two of them
in parallel: threads in one process for ALE, processes and sockets for the rest.

Besides env-steps/s it reports the trainer's CPU time per vector step (its thread time).
On 2 cores that time is not free: the trainer runs on the core of a worker that is waiting
for its next action (``perf sched timehist``), so the step takes about one worker's
compute plus the trainer's time.

With ``--raw`` the same for raw ALE/Pong-v5 frames (210×160×3, sticky actions, Atari-v0's
defaults), ALE's vector env set to the same settings.

Run: ``python benchmarks/bench_pong_floor.py [--blocks 20] [--raw] [--write]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.shared_memory import SharedMemory
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import openenv_gym  # noqa: F401  (registers OpenEnv/*)
from openenv_gym.envs.atari.env import AtariEnv
from openenv_gym.protocol.slices import PLAIN_REPLY, STEP
from openenv_gym.protocol.sockets import FrameReader
from openenv_gym.protocol.wire import decode, encode

from _results import write_section  # benchmarks/_results.py
from bench_finrl_atari import ALE_PRE, ALE_V5_RAW, PONG_PRE, ale_pong

STEPS_PER_BLOCK = 150
ALE_TWO = "ALE AtariVectorEnv (C++ threads)"
THREADS = "two envs in this process, the second on a thread"
ONE_LOCAL = "one env in this process (the workers' AtariEnv), no vector env"
ONE_ALE = "ALE AtariVectorEnv, n=1 (one C++ thread)"
ALE_AWAY = "ALE AtariVectorEnv in one worker process, bare loop"


def bare_loop(socks: list[socket.socket], frames: list[bytes], columns: list[dict[str, np.ndarray]],
              marks: dict[str, int] | None = None, bell: Any = None) -> Callable[[np.ndarray], Any]:
    """A step with nothing but the exchange and the copies: each worker's action into its
    ``action`` column, its request frame sent, its reply read, its results copied out. The
    command columns hold ``STEP`` already (``main`` writes them after each block's reset).
    With ``marks``, ``time.perf_counter_ns()`` goes there as the sends begin (``sending``) and
    end (``sent``) and once the replies are read (``taken``), for ``bench_pong_timeline.py``.
    ``bell``: the workers' bell (``openenv_gym/protocol/bell.py``), rung once after the sends
    as the product's pool rings it (workers that sleep on it wait for the ring)."""
    n = len(socks)
    obs = np.zeros((n, *columns[0]["obs"].shape[1:]), columns[0]["obs"].dtype)
    rewards, terms, truncs = np.zeros(n), np.zeros(n, np.bool_), np.zeros(n, np.bool_)

    def step(actions: np.ndarray) -> Any:
        if marks is not None:
            marks["sending"] = time.perf_counter_ns()
        for k in range(n):
            columns[k]["action"][0] = actions[k]
            socks[k].send(frames[k])
        if bell is not None:
            bell.ring()
        if marks is not None:
            marks["sent"] = time.perf_counter_ns()
        for k in range(n):  # the replies first, then the copies, as RemoteVectorEnv does
            decode(memoryview(socks[k].recv(1 << 16))[4:])  # the reply (its infos unused)
        if marks is not None:
            marks["taken"] = time.perf_counter_ns()
        for k in range(n):
            cols = columns[k]
            rewards[k], terms[k], truncs[k] = cols["reward"][0], cols["terminated"][0], cols["truncated"][0]
            obs[k] = cols["obs"][0]
        return obs.copy(), rewards.copy(), terms.copy(), truncs.copy(), {}

    return step


def same_workers_loop(envs: Any, marks: dict[str, int] | None = None) -> Callable[[np.ndarray], Any]:
    """:func:`bare_loop` over ``envs``' own workers and slices."""
    slices = envs.pool.slices
    return bare_loop([piece.client._sock for piece in slices], [piece._step_frame for piece in slices],
                     [piece.columns for piece in slices], marks, slices[0].client.bell)


def step_autoreset(env: AtariEnv, action: int) -> tuple[np.ndarray, float, bool, bool]:
    """``env``'s step, then its reset if the episode ended (a worker's autoreset): the
    observation to return, the reward and the episode-end flags."""
    obs, reward, terminated, truncated, _ = env.step(action)
    if terminated or truncated:
        obs, _ = env.reset()
    return obs, reward, terminated, truncated


def _bare_worker(sock: socket.socket, shm_name: str, settings: dict[str, Any], seed: int) -> None:
    """A bare worker (see the module's docstring): its env's step between a request frame,
    waited for with the product's own reader, and a constant reply; results in the columns
    of the shared block ``shm_name`` (:func:`_bare_columns`)."""
    env = AtariEnv(game="pong", **settings)
    obs, _ = env.reset(seed=seed)
    shm = SharedMemory(shm_name)
    cols = _bare_columns(shm.buf, obs.shape)
    reader = FrameReader(sock)  # polls before it sleeps, as the product's workers' readers do
    while True:
        try:
            reader.read()
        except ConnectionResetError:  # the trainer closed its end
            break
        obs, reward, terminated, truncated = step_autoreset(env, int(cols["action"][0]))
        cols["reward"][0], cols["terminated"][0], cols["truncated"][0] = reward, terminated, truncated
        cols["obs"][0] = obs
        sock.send(PLAIN_REPLY)
    del cols
    shm.close()


def _bare_columns(buf: Any, shape: tuple[int, ...], n: int = 1) -> dict[str, np.ndarray]:
    """A bare worker's columns in its shared block, named and shaped as an ``n``-env slice's."""
    return {"action": np.ndarray((n,), np.int64, buf, 0), "reward": np.ndarray((n,), np.float64, buf, 8 * n),
            "terminated": np.ndarray((n,), np.bool_, buf, 16 * n),
            "truncated": np.ndarray((n,), np.bool_, buf, 17 * n),
            "obs": np.ndarray((n, *shape), np.uint8, buf, _obs_offset(n))}


def _obs_offset(n: int) -> int:
    """Where the frames start in a bare worker's block: past the other columns, 64-aligned."""
    return -(-18 * n // 64) * 64


def _ale_worker(sock: socket.socket, shm_name: str, settings: dict[str, Any], n: int) -> None:
    """ALE's own vector env of ``n`` envs as a bare worker (see the module's docstring): it
    autoresets by itself, so each request is one vector step."""
    env = ale_pong(settings, num_envs=n)()
    obs, _ = env.reset(seed=0)
    shm = SharedMemory(shm_name)
    cols = _bare_columns(shm.buf, obs.shape[1:], n)
    reader = FrameReader(sock)
    while True:
        try:
            reader.read()
        except ConnectionResetError:  # the trainer closed its end
            break
        obs, reward, terminated, truncated, _ = env.step(cols["action"])
        cols["reward"][:], cols["terminated"][:], cols["truncated"][:] = reward, terminated, truncated
        cols["obs"][:] = obs
        sock.send(PLAIN_REPLY)
    del cols
    env.close()
    shm.close()


class AleWorker:
    """ALE's vector env in a worker process of this script's own (see the module's
    docstring); :attr:`step` exchanges one request with it and copies the results out."""

    def __init__(self, settings: dict[str, Any], shape: tuple[int, ...], n: int = 2) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.block = SharedMemory(create=True, size=_obs_offset(n) + n * int(np.prod(shape)))
        self.sock, theirs = socket.socketpair()
        self.proc = spawn.Process(target=_ale_worker, args=(theirs, self.block.name, settings, n), daemon=True)
        self.proc.start()
        theirs.close()
        self.columns = _bare_columns(self.block.buf, shape, n)
        frame = encode({})

        def step(actions: np.ndarray) -> Any:
            cols = self.columns
            cols["action"][:] = actions
            self.sock.send(frame)
            decode(memoryview(self.sock.recv(1 << 16))[4:])
            return (cols["obs"].copy(), cols["reward"].copy(), cols["terminated"].copy(),
                    cols["truncated"].copy(), {})

        self.step: Callable[[np.ndarray], Any] | None = step

    def close(self) -> None:
        self.sock.close()
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
        self.step, self.columns = None, {}
        self.block.close()
        self.block.unlink()


class BareWorkers:
    """Bare worker processes (see the module's docstring); :attr:`step` is :func:`bare_loop`
    over them."""

    def __init__(self, settings: dict[str, Any], shape: tuple[int, ...], n: int = 2) -> None:
        spawn = multiprocessing.get_context("spawn")  # not a fork of this threaded process
        self.blocks = [SharedMemory(create=True, size=64 + int(np.prod(shape))) for _ in range(n)]
        pairs = [socket.socketpair() for _ in range(n)]
        self.procs = [spawn.Process(target=_bare_worker, args=(theirs, shm.name, settings, i), daemon=True)
                      for i, ((_, theirs), shm) in enumerate(zip(pairs, self.blocks))]
        for proc in self.procs:
            proc.start()
        for _, theirs in pairs:
            theirs.close()
        self.socks = [ours for ours, _ in pairs]
        self.columns = [_bare_columns(shm.buf, shape) for shm in self.blocks]
        self.step = bare_loop(self.socks, [encode({})] * n, self.columns)

    def close(self) -> None:
        for sock in self.socks:
            sock.close()  # each worker's read sees the connection closed, and it exits
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
        self.step, self.columns = None, []  # the views go before their blocks close
        for shm in self.blocks:
            shm.close()
            shm.unlink()


class ThreadedPair:
    """Two of the workers' ``AtariEnv`` in this process (seeds 0 and 1, as the bare workers'),
    the second stepped on a thread of its own while this thread steps the first (see the
    module's docstring); :attr:`step` returns the batch as :func:`bare_loop`'s does."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.envs = [AtariEnv(game="pong", **settings) for _ in range(2)]
        first = [env.reset(seed=seed)[0] for seed, env in enumerate(self.envs)]
        self._second = ThreadPoolExecutor(1, thread_name_prefix="second-env")
        self._obs = np.zeros((2, *first[0].shape), first[0].dtype)
        self._rewards, self._terms, self._truncs = np.zeros(2), np.zeros(2, np.bool_), np.zeros(2, np.bool_)

    def step(self, actions: np.ndarray) -> Any:
        second = self._second.submit(step_autoreset, self.envs[1], int(actions[1]))
        for k, result in enumerate((step_autoreset(self.envs[0], int(actions[0])), second.result())):
            self._obs[k], self._rewards[k], self._terms[k], self._truncs[k] = result
        return self._obs.copy(), self._rewards.copy(), self._terms.copy(), self._truncs.copy(), {}

    def close(self) -> None:
        self._second.shutdown()
        for env in self.envs:
            env.close()


def pool_loop(envs: Any, bookkeeping: bool) -> Callable[[np.ndarray], Any]:
    """The bare loop through the product's pool and sockets; with ``bookkeeping``, also what a
    correct usual step must do (no fallback: anything unusual raises)."""
    pool, n = envs.pool, envs.num_envs
    workers = list(range(len(pool.slices)))
    plan = [(lo, hi, piece.columns, [(column, envs._info_values[k]) for k, column in piece.info_columns.items()])
            for (lo, hi), piece in zip(envs._bounds, pool.slices)]
    obs, rewards = envs._obs.array, envs._rewards
    terms, truncs, ok = envs._terminations, envs._truncations, envs._info_ok

    def step(actions: np.ndarray) -> Any:
        if bookkeeping:
            actions = np.asarray(actions)
            if actions.ndim != 1 or len(actions) != n or actions.dtype.kind not in "iub":
                raise ValueError("bad actions")
        for lo, hi, cols, _ in plan:
            cols["action"][...] = actions[lo:hi]
        pool.send_slices(workers)
        replies = pool.receive_slices(workers)
        for w, (lo, hi, cols, infos) in enumerate(plan):
            if replies[w]:
                raise RuntimeError(f"unusual reply: {replies[w]!r}")
            rewards[lo:hi], terms[lo:hi], truncs[lo:hi] = cols["reward"], cols["terminated"], cols["truncated"]
            obs[lo:hi] = cols["obs"]
            if bookkeeping:
                ok[lo:hi] = cols["info_ok"]
                for column, values in infos:
                    values[lo:hi] = column
        batched: dict[str, Any] = {}
        if bookkeeping:
            envs._autoreset_envs = terms | truncs
            if ok.all():
                for key, values in envs._info_values.items():
                    batched[key], batched["_" + key] = values.copy(), ok.copy()
        return obs.copy(), rewards.copy(), terms.copy(), truncs.copy(), batched

    return step


def block(step: Callable[[np.ndarray], Any], actions: list[np.ndarray]) -> tuple[float, float]:
    """Seconds and trainer CPU seconds per vector step over one block."""
    for a in actions[:10]:
        step(a)
    cpu, start = time.thread_time(), time.perf_counter()
    for a in actions[:STEPS_PER_BLOCK]:
        step(a)
    return ((time.perf_counter() - start) / STEPS_PER_BLOCK, (time.thread_time() - cpu) / STEPS_PER_BLOCK)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--raw", action="store_true", help="raw ALE/Pong-v5 frames, not preprocessed")
    parser.add_argument("--write", action="store_true", help="update benchmarks/RESULTS.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    settings = {} if args.raw else PONG_PRE
    ours = gym.make_vec("OpenEnv/Atari-v0", num_envs=2, provider="process", game="pong", **settings)
    ale_settings = ALE_V5_RAW if args.raw else ALE_PRE
    ale, ale_one = ale_pong(ale_settings)(), ale_pong(ale_settings, num_envs=1)()
    local = AtariEnv(game="pong", **settings)
    bare = pair = away = None
    try:
        ours.reset(seed=0)
        ale.reset(seed=0)
        ale_one.reset(seed=0)
        bare = BareWorkers(settings, ours.single_observation_space.shape)
        pair = ThreadedPair(settings)
        away = AleWorker(ale_settings, ale.single_observation_space.shape)
        rng = np.random.default_rng(0)
        actions = [rng.integers(0, 6, 2) for _ in range(STEPS_PER_BLOCK)]
        ways = {"RemoteVectorEnv": ours.step,
                "straight-line usual step (pool + bookkeeping)": pool_loop(ours, bookkeeping=True),
                "pool and sockets, copies only": pool_loop(ours, bookkeeping=False),
                "bare loop, same workers": same_workers_loop(ours),
                "bare loop, bare workers": bare.step,
                THREADS: pair.step,
                ALE_AWAY: away.step,
                ALE_TWO: ale.step}
        alone = {ONE_LOCAL: lambda a: local.step(int(a[0])), ONE_ALE: lambda a: ale_one.step(a[:1])}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in (*ways, *alone)}
        for _ in range(args.blocks):
            for name, step in (*ways.items(), *alone.items()):
                times[name].append(block(step, actions))
                ours.reset()  # only the vector envs autoreset: every way starts live episodes
                local.reset()
                for piece in ours.pool.slices:  # the pool loops leave the command column as is
                    piece.columns["cmd"][:] = STEP
    finally:
        ours.close()
        ale.close()
        ale_one.close()
        local.close()
        if bare is not None:
            bare.close()
        if pair is not None:
            pair.close()
        if away is not None:
            away.close()
    ale_wall = [wall for wall, _ in times[ALE_TWO]]
    flags = (" --raw" if args.raw else "") + (" --write" if args.write else "")
    config = "raw RGB (ALE/Pong-v5)" if args.raw else "preprocessed"
    lines = [f"Command: `python benchmarks/bench_pong_floor.py{flags}` "
             f"({args.blocks} interleaved blocks of {STEPS_PER_BLOCK} vector steps, medians; "
             f"2 shared cores, 1-min load {load:.1f} at start).", "",
             f"| Pong n=2, {config} | env-steps/s | vs ALE (median of block ratios) "
             "| µs per vector step | trainer CPU µs per vector step |", "|---|---|---|---|---|"]
    medians = {name: (statistics.median(w for w, _ in rows) * 1e6, statistics.median(c for _, c in rows) * 1e6)
               for name, rows in times.items()}
    for name in ways:
        ratio = statistics.median(a / w for a, (w, _) in zip(ale_wall, times[name]))
        wall, cpu = medians[name]
        lines.append(f"| {name} | {2e6 / wall:,.0f} | {ratio:.2f}× | {wall:.0f} | {cpu:.0f} |")
    lines += ["", f"| one Pong env, {config}, no second env | µs per step | trainer CPU µs per step |",
              "|---|---|---|"]
    lines += [f"| {name} | {medians[name][0]:.0f} | {medians[name][1]:.0f} |" for name in alone]
    # Each n=2 way beside the one env it runs two of: ALE's own n=1, or our env in this process.
    over = {ALE_TWO: ONE_ALE, "bare loop, bare workers": ONE_LOCAL, THREADS: ONE_LOCAL,
            "RemoteVectorEnv": ONE_LOCAL}
    added = {name: medians[name][0] - medians[one][0] for name, one in over.items()}
    lines += ["", "What n=2 adds to one env's step (µs per vector step; ALE's over its own n=1, the "
              "others' over one env in this process): " + "; ".join(f"{name} +{us:.0f}" for name, us in added.items())
              + "."]
    text = "\n".join(lines)
    print(text)
    if args.write:
        section, after = ("pong-floor-raw", "pong-floor") if args.raw else ("pong-floor", "finrl-atari-notes")
        write_section(section, f"## Pong n=2, {config}: RemoteVectorEnv, a bare loop over the same "
                      f"workers and over bare workers, two envs on two threads, ALE; one env alone "
                      f"(issue 6)\n\n{text}", after=after)


if __name__ == "__main__":
    main()
