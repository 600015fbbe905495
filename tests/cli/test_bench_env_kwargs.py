"""`bench` reports a bad --env-kwargs as `start` and `serve` do: an argument the env refuses is
a usage error (exit 2), whether the worker refuses it or the env's constructor (a TypeError),
without a traceback (tests/cli/)."""

from __future__ import annotations

import pytest

from tests.cli.cli_helpers import run


@pytest.mark.parametrize("args", [
    ("echo", "--env-kwargs", '{"bogus": 1}'),
    ("gym", "--num-envs", "2", "--env-kwargs", '{"env_id": "CartPole-v1", "autoreset_mode": "bogus"}'),
    # Gym-v0 passes what it does not know on: CartPole's constructor raises the TypeError.
    ("gym", "--env-kwargs", '{"env_id": "CartPole-v1", "bogus": 1}'),
])
def test_bench_env_kwargs_the_env_refuses_are_a_usage_error(args: tuple[str, ...]) -> None:
    out = run("bench", *args, "--provider", "process", "--steps", "5", "--warmup", "0")
    assert out.returncode == 2, out.stderr
    assert "bogus" in out.stderr and "--env-kwargs" in out.stderr
    assert "Traceback" not in out.stderr



@pytest.mark.parametrize("num_envs", ["1", "2"])
@pytest.mark.parametrize("key, value, where", [
    ("id", '"Pendulum-v1"', "env_id"),  # the usual slip: Gym-v0's served id is env_id
    ("num_envs", "3", "--num-envs"),
    ("provider", '"docker"', "--provider"),
])
def test_bench_env_kwargs_setting_what_bench_sets_are_a_usage_error(num_envs: str, key: str, value: str,
                                                                    where: str) -> None:
    # They reached gym.make/make_vec a second time: exit 1 with "the env did not start:
    # TypeError: make() got multiple values for argument 'id'" and a fix pointing at `doctor`.
    out = run("bench", "gym", "--num-envs", num_envs, "--steps", "5", "--warmup", "0",
              "--env-kwargs", f'{{"{key}": {value}}}')
    assert out.returncode == 2, out.stderr
    error = next(line for line in out.stderr.splitlines() if line.startswith("error:"))
    assert f"--env-kwargs cannot set {key!r}" in error and where in error, out.stderr
    assert "doctor" not in out.stderr and "Traceback" not in out.stderr
