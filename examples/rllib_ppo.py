"""PPO with RLlib (new API stack) on remote CartPole envs, in two layouts.

``--mode runners``: RLlib's env runners are Ray actors spread over the cluster; inside each,
``gym_env_vectorize_mode="vector_entry_point"`` makes RLlib call ``gym.make_vec`` on our id,
which builds a :class:`~openenv_gym.vector.RemoteVectorEnv` whose workers are local
subprocesses of that runner (``provider="process"``).

``--mode fanout``: no remote env runners; the trainer's own env runner holds one
``RemoteVectorEnv`` with ``provider="ray"``, whose workers are placed across the cluster's
nodes (SPREAD). One process fans every step out to all nodes over our binary path.

Install: ``pip install torch==2.13.0 -e '.[rllib]'``. Run (starts a local Ray, or joins the
cluster in ``RAY_ADDRESS``/``--address``; ``--demo-cluster`` builds a 3-node cluster on this
machine)::

    python examples/rllib_ppo.py --mode runners --iterations 5
    python examples/rllib_ppo.py --mode fanout --iterations 5 --demo-cluster
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

ENV_ID = "openenv_gym:OpenEnv/Gym-v0"  # the module prefix registers the id in every runner
#: Seconds a worker may hang before the vector env replaces it. Well under RLlib's
#: ``sample_timeout_s`` (60 s): at our default (also 60 s) RLlib gives up on the env runner's
#: sample first, and the iteration a hung worker falls in returns no samples (NaN returns).
STEP_TIMEOUT = 15.0


def build_config(mode: str, num_envs: int = 4, envs_per_worker: int = 2,
                 env_runners: int = 2, batch: int = 1000) -> Any:
    """The PPO config for one layout.

    Args:
        mode: ``"runners"`` (env runners on the cluster, our vector env inside) or
            ``"fanout"`` (one runner, workers across nodes through ``provider="ray"``).
        num_envs: Sub-envs per env runner.
        envs_per_worker: Sub-envs each openenv_gym worker hosts.
        env_runners: Remote env runners (``runners`` mode).
        batch: Env steps per training iteration.

    Returns:
        A :class:`ray.rllib.algorithms.ppo.PPOConfig`.
    """
    from ray.rllib.algorithms.ppo import PPOConfig

    if mode not in ("runners", "fanout"):
        raise ValueError(f"mode must be 'runners' or 'fanout', got {mode!r}")
    env_config: dict[str, Any] = {"env_id": "CartPole-v1", "envs_per_worker": envs_per_worker,
                                  "step_timeout": STEP_TIMEOUT}
    if mode == "runners":
        env_config["provider"] = "process"
        runners = {"num_env_runners": env_runners, "num_cpus_per_env_runner": 0.5}
    else:
        env_config["provider"] = "ray"
        # Fractional CPUs: an env server is mostly idle between steps on a small env.
        env_config["provider_options"] = {"strategy": "SPREAD", "num_cpus": 0.25}
        runners = {"num_env_runners": 0}
    return (
        PPOConfig()
        .environment(ENV_ID, env_config=env_config)
        .env_runners(num_envs_per_env_runner=num_envs,
                     gym_env_vectorize_mode="vector_entry_point", **runners)
        .training(train_batch_size_per_learner=batch, minibatch_size=min(batch, 250),
                  num_epochs=4, lr=3e-4)
    )


def build_algo(config: Any) -> Any:
    """Build the algorithm (its env runners build our vector envs now)."""
    if config.num_env_runners == 0:
        import torch

        # The trainer samples itself: one tiny forward pass per vector step. Several torch
        # threads only contend for the cores (measured here: 28 s vs 1.2 s per iteration).
        torch.set_num_threads(1)
    return config.build_algo()


def train_algo(algo: Any, iterations: int, report: bool = True) -> list[dict[str, float]]:
    """Train a built algorithm ``iterations`` times.

    Returns:
        Per iteration: ``episode_return_mean``, ``env_steps`` (lifetime) and ``seconds``.
    """
    rows = []
    for i in range(iterations):
        start = time.perf_counter()
        result = algo.train()
        runners = result["env_runners"]
        row = {"iteration": i + 1,
               "episode_return_mean": float(runners.get("episode_return_mean", float("nan"))),
               "env_steps": float(runners.get("num_env_steps_sampled_lifetime", 0)),
               "seconds": time.perf_counter() - start}
        rows.append(row)
        if report:
            print(f"iter {row['iteration']:3d}  return {row['episode_return_mean']:7.1f}  "
                  f"env steps {row['env_steps']:8.0f}  {row['seconds']:5.1f} s", flush=True)
    return rows


def train(config: Any, iterations: int, report: bool = True) -> list[dict[str, float]]:
    """Build the algorithm, train it ``iterations`` times, stop it (and its envs' workers)."""
    algo = build_algo(config)
    try:
        return train_algo(algo, iterations, report)
    finally:
        algo.stop()


def start_demo_cluster() -> Any:
    """A 3-node Ray cluster on this machine (loopback), for trying ``fanout`` placement."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    for _ in range(2):
        cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["runners", "fanout"], default="runners")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--num-envs", type=int, default=4)
    parser.add_argument("--envs-per-worker", type=int, default=2)
    parser.add_argument("--env-runners", type=int, default=2)
    parser.add_argument("--address", default=None, help="Ray cluster address (default: local)")
    parser.add_argument("--demo-cluster", action="store_true",
                        help="start a 3-node Ray cluster on this machine first")
    args = parser.parse_args()

    import ray

    cluster = start_demo_cluster() if args.demo_cluster else None
    ray.init(address=cluster.address if cluster else args.address, log_to_driver=False,
             **({} if cluster or args.address else {"include_dashboard": False}))
    try:
        print(f"Ray nodes: {len([n for n in ray.nodes() if n['Alive']])}, "
              f"CPUs: {ray.cluster_resources().get('CPU', 0):.0f}, mode: {args.mode}")
        config = build_config(args.mode, args.num_envs, args.envs_per_worker, args.env_runners)
        train(config, args.iterations)
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()


if __name__ == "__main__":
    main()
