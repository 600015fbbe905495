"""RLlib (new API stack) trains PPO on our vector env, in both layouts of examples/rllib_ppo.py.

Real Ray, real env runners, real workers: ``runners`` puts RLlib's env runners on Ray with
``gym_env_vectorize_mode="vector_entry_point"`` (our RemoteVectorEnv inside, process
workers); ``fanout`` keeps sampling in the trainer with workers placed by ``provider="ray"``.
"""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import stop_process

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib.algorithms.ppo",
                    reason="RLlib's dependencies are missing: pip install -e '.[rllib]'")

pytestmark = pytest.mark.slow  # builds two RLlib algorithms: about 45 s here

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rllib_ppo.py"
BATCH = 400


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("rllib_ppo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _check_training(rows: list[dict[str, float]]) -> None:
    assert [r["iteration"] for r in rows] == [1, 2]
    assert rows[-1]["env_steps"] >= 2 * BATCH
    # CartPole pays 1 per step: any finite mean return >= 8 means whole episodes ran remotely.
    assert all(math.isfinite(r["episode_return_mean"]) and r["episode_return_mean"] >= 8 for r in rows)


def test_ppo_env_runners_on_ray_build_our_vector_env(local_ray) -> None:
    example = _example()
    config = example.build_config("runners", num_envs=2, envs_per_worker=1, env_runners=1, batch=BATCH)
    algo = example.build_algo(config)
    try:
        kinds = algo.env_runner_group.foreach_env_runner(
            lambda runner: (type(runner.env.unwrapped).__name__, runner.env.unwrapped.provider_name,
                            runner.env.num_envs),
            local_env_runner=False)
        assert kinds == [("RemoteVectorEnv", "process", 2)]
        _check_training(example.train_algo(algo, 2, report=False))
    finally:
        algo.stop()


def test_ppo_single_trainer_fans_out_to_ray_placed_workers(local_ray) -> None:
    example = _example()
    config = example.build_config("fanout", num_envs=4, envs_per_worker=2, batch=BATCH)
    algo = example.build_algo(config)
    try:
        env = algo.env_runner.env.unwrapped
        assert type(env).__name__ == "RemoteVectorEnv" and env.provider_name == "ray"
        workers = env._pool.workers
        # Placed by Ray on this host: reached through their Unix sockets, slices in shared memory.
        assert len(workers) == 2 and all(w.address.startswith("unix://") for w in workers)
        assert all(piece.shared for piece in env._pool.slices)
        assert all(w.node_id == ray.get_runtime_context().get_node_id() for w in workers)
        _check_training(example.train_algo(algo, 2, report=False))
        pids = [w.pid for w in workers]
    finally:
        algo.stop()
    # Stopping the algorithm closes its env, which stops the workers it placed.
    assert all(_gone(pid) for pid in pids)


def test_hung_worker_is_replaced_before_rllib_gives_up_on_the_sample(local_ray) -> None:
    """A worker that hangs (SIGSTOP) mid-training is replaced within the iteration it falls in.

    At the vector env's default ``step_timeout`` (60 s) RLlib's own ``sample_timeout_s`` (60 s)
    ran out first: that iteration came back without samples and with NaN episode returns.
    """
    example = _example()
    config = example.build_config("runners", num_envs=2, envs_per_worker=1, env_runners=1, batch=BATCH)
    algo = example.build_algo(config)
    try:
        example.train_algo(algo, 1, report=False)
        pid = _first_worker_pid(algo)
        stop_process(pid)  # the runner's workers are its local subprocesses, on this host
        (row,) = example.train_algo(algo, 1, report=False)
        new_pid = _first_worker_pid(algo)
    finally:
        algo.stop()
    assert new_pid != pid
    assert row["env_steps"] >= 2 * BATCH  # this iteration's samples arrived
    assert math.isfinite(row["episode_return_mean"])
    assert _gone(pid)


def _first_worker_pid(algo: Any) -> int:
    """The pid of worker 0 of the (one) remote env runner's vector env."""
    (pid,) = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.env.unwrapped.workers[0].pid, local_env_runner=False)
    return pid


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}") or _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True
