"""The benchmark scripts' timed loops run as RESULTS.md's commands run them (process provider only)."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


def test_bench_docker_step_median_runs_past_echos_episode_length() -> None:
    # Its 200 warm-up steps alone pass Echo's default max_steps (100), whose end the server
    # enforces: the step loop must keep one episode open for all of them.
    bench = _load("bench_docker")
    assert bench.step_median("process", 5) > 0


def test_bench_pong_floor_bare_workers_step_the_same_env_as_a_local_one(monkeypatch) -> None:
    # The floor row is worth quoting only if its workers do the product's work: the same
    # AtariEnv, same seed and actions, same frames, rewards and flags.
    import numpy as np

    monkeypatch.syspath_prepend(str(BENCH))  # the spawned workers import the script, as a run does

    from openenv_gym.envs.atari.env import AtariEnv

    bench = _load("bench_pong_floor")
    local = AtariEnv(game="pong", **bench.PONG_PRE)
    obs, _ = local.reset(seed=0)
    bare = bench.BareWorkers(bench.PONG_PRE, obs.shape)
    try:
        rng = np.random.default_rng(0)
        for _ in range(30):
            actions = rng.integers(0, 6, 2)
            frames, rewards, terms, truncs, _ = bare.step(actions)
            obs, reward, terminated, truncated, _ = local.step(int(actions[0]))
            assert np.array_equal(frames[0], obs)
            assert (rewards[0], terms[0], truncs[0]) == (reward, terminated, truncated)
        assert not np.array_equal(frames[0], frames[1])  # worker 1 plays its own seed
    finally:
        bare.close()
        local.close()
    assert all(not proc.is_alive() for proc in bare.procs)


def test_bench_pong_floor_ale_worker_steps_as_ales_vector_env_in_this_process(monkeypatch) -> None:
    # The row of ALE's vector env behind one process hop is worth quoting only if the worker
    # does the in-process reference's work: same seed and actions, same frames, rewards, flags.
    import numpy as np

    monkeypatch.syspath_prepend(str(BENCH))  # the spawned worker imports the script
    bench = _load("bench_pong_floor")
    here = bench.ale_pong(bench.ALE_PRE)()
    frames, _ = here.reset(seed=0)
    away = bench.AleWorker(bench.ALE_PRE, frames.shape[1:])
    try:
        rng = np.random.default_rng(0)
        for _ in range(30):
            actions = rng.integers(0, 6, 2)
            got, want = away.step(actions), here.step(actions)
            for a, b in zip(got[:4], want[:4]):
                assert np.array_equal(a, b)
        assert not np.array_equal(got[0][0], got[0][1])  # two envs, not one twice
    finally:
        away.close()
        here.close()
    assert not away.proc.is_alive()


def test_bench_pong_floor_one_env_rows_step_one_env_of_the_same_frame_shape() -> None:
    # The one-env table sets ALE's vector env at n=1 beside the workers' AtariEnv alone: worth
    # quoting only if both step one env of the same preprocessed frame shape (their noop
    # starts draw from different generators, so the frames themselves differ).
    import numpy as np

    from openenv_gym.envs.atari.env import AtariEnv

    bench = _load("bench_finrl_atari")
    ale = bench.ale_pong(bench.ALE_PRE, num_envs=1)()
    local = AtariEnv(game="pong", **bench.PONG_PRE)
    try:
        frames, _ = ale.reset(seed=0)
        obs, _ = local.reset(seed=0)
        assert frames.shape == (1, *obs.shape) and frames.dtype == obs.dtype
        frames, rewards, *_ = ale.step(np.array([1]))  # a one-env step takes the first action only
        assert frames.shape == (1, *obs.shape) and rewards.shape == (1,)
    finally:
        ale.close()
        local.close()


def test_bench_pong_floor_threaded_pair_steps_each_env_as_a_local_one() -> None:
    # The threads row is worth quoting only if its second thread steps its own env, with
    # its own action, to the same frames, rewards and flags a local env gives (and resets it
    # at an episode's end as a worker does).
    import threading

    import numpy as np

    from openenv_gym.envs.atari.env import AtariEnv

    bench = _load("bench_pong_floor")
    settings = {**bench.PONG_PRE, "max_num_frames_per_episode": 60}  # episodes end within the test
    pair = bench.ThreadedPair(settings)
    local = [AtariEnv(game="pong", **settings) for _ in range(2)]
    try:
        for seed, env in enumerate(local):
            env.reset(seed=seed)
        rng = np.random.default_rng(0)
        ended = 0
        for _ in range(40):
            actions = rng.integers(0, 6, 2)
            frames, rewards, terms, truncs, _ = pair.step(actions)
            for k, env in enumerate(local):
                obs, reward, terminated, truncated, _ = env.step(int(actions[k]))
                if terminated or truncated:
                    obs, _ = env.reset()
                assert np.array_equal(frames[k], obs)
                assert (rewards[k], terms[k], truncs[k]) == (reward, terminated, truncated)
                ended += terminated or truncated
        assert ended >= 2  # both envs went through a reset
        assert not np.array_equal(frames[0], frames[1])  # each env plays its own seed
    finally:
        pair.close()
        for env in local:
            env.close()
    assert not any(thread.name.startswith("second-env") for thread in threading.enumerate())


def test_bench_pong_timeline_lines_up_every_product_step_with_both_workers_stamps() -> None:
    # Its table is worth quoting only if each of the product's steps is matched with the
    # request each of its two workers served for it (stamps the fork server's workers take
    # through benchmarks/_timeline_site): a renamed hook would leave the workers unstamped.
    out = subprocess.run([sys.executable, str(BENCH / "bench_pong_timeline.py"), "--blocks", "1"],
                         capture_output=True, text=True, timeout=600, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    assert "150 product steps matched with both workers' stamps" in out.stdout, out.stdout
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in out.stdout.splitlines()
            if line.startswith("| ") and " | " in line}
    env_step = float(rows["env step, the worker answering last"][0])
    whole = float(rows["whole step"][0])
    assert 0 < env_step < whole  # an Atari step inside the vector step that waited for it


def test_bench_docker_without_an_engine_says_so_instead_of_a_traceback(tmp_path) -> None:
    # RESULTS.md's docker command run where no engine answers must end with the reason.
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'no-docker.sock'}"}
    out = subprocess.run([sys.executable, str(BENCH / "bench_docker.py"), "--steps", "10", "--starts", "1"],
                         capture_output=True, text=True, timeout=120, cwd=BENCH.parent, env=env)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    assert "needs a Docker engine" in out.stderr and "no-docker.sock" in out.stderr, out.stderr


@pytest.mark.parametrize("argv", [
    ["bench_confine.py", "--blocks", "1"],  # docker is in its default --providers
    ["bench_trl.py", "--completions", "3", "--repeats", "1"],  # docker is its default --provider
    ["bench_vector.py", "--provider", "docker", "--suite", "cartpole", "--seconds", "0.1"],
    ["bench_coding_git.py", "--providers", "process,docker", "--n", "1", "--problems", "8"],
    ["bench_soak_agents.py", "--provider", "docker", "--seconds", "1", "--every", "1"],
], ids=lambda argv: argv[0])
def test_bench_with_docker_rows_without_an_engine_says_so_before_any_row(argv, tmp_path) -> None:
    # A run whose providers include docker, where no engine answers: the reason and how to
    # run without Docker, not ProviderUnavailableError's traceback after the process rows.
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'no-docker.sock'}"}
    out = subprocess.run([sys.executable, str(BENCH / argv[0]), *argv[1:]],
                         capture_output=True, text=True, timeout=300, cwd=BENCH.parent, env=env)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    assert "needs a Docker engine" in out.stderr and "no-docker.sock" in out.stderr, out.stderr
    assert "for this script: pass --provider" in out.stderr, out.stderr
    assert out.stdout == ""  # stopped before the first row (or suite header) was printed


def test_bench_trl_table_quotes_the_command_that_ran_it() -> None:
    # Its Command line is RESULTS.md's record of how the figures were made: a run without
    # --write must not claim one (process provider: the same table, no Docker needed).
    out = subprocess.run([sys.executable, str(BENCH / "bench_trl.py"), "--provider", "process",
                          "--completions", "3", "--repeats", "1"],
                         capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    assert "Command: `python benchmarks/bench_trl.py --provider process --completions 3`." in out.stdout, out.stdout
    assert "| EnvReward, 8 workers |" in out.stdout


def test_bench_ray_docker_without_an_engine_says_so_before_starting_a_cluster(tmp_path) -> None:
    # RESULTS.md's `bench_ray.py --docker` where no engine answers: the reason, not a worker's
    # traceback after a Ray cluster was started for nothing.
    ray_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must fit
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path / 'no-docker.sock'}", "RAY_TMPDIR": ray_dir}
    try:
        out = subprocess.run([sys.executable, str(BENCH / "bench_ray.py"), "--docker", "--steps", "10",
                              "--vector-steps", "10", "--rounds", "1"],
                             capture_output=True, text=True, timeout=300, cwd=BENCH.parent, env=env)
    finally:
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr
    assert "needs a Docker engine" in out.stderr, out.stderr
    assert "cluster up" not in out.stdout


def test_bench_finrl_atari_table_quotes_the_seconds_it_ran() -> None:
    # Its Command line records the run's settings: --seconds below 1 must not print as "0 s".
    out = subprocess.run([sys.executable, str(BENCH / "bench_finrl_atari.py"), "--seconds", "0.1", "--runs", "1"],
                         capture_output=True, text=True, timeout=300, cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    assert "(provider process, 1 runs × 0.1 s, median;" in out.stdout, out.stdout
    assert "| measure | ours | reference | ours / reference | target |" in out.stdout
