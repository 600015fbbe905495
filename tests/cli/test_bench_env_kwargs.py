"""`bench` reports a bad --env-kwargs as `start` and `serve` do: an argument the env refuses is
a usage error (exit 2), a constructor's own exception exits 1 without a traceback (tests/cli/)."""

from __future__ import annotations

import pytest

from tests.cli.cli_helpers import run


@pytest.mark.parametrize("args", [
    ("echo", "--env-kwargs", '{"bogus": 1}'),
    ("gym", "--num-envs", "2", "--env-kwargs", '{"env_id": "CartPole-v1", "autoreset_mode": "bogus"}'),
])
def test_bench_env_kwargs_the_env_refuses_are_a_usage_error(args: tuple[str, ...]) -> None:
    out = run("bench", *args, "--provider", "process", "--steps", "5", "--warmup", "0")
    assert out.returncode == 2, out.stderr
    assert "bogus" in out.stderr and "--env-kwargs" in out.stderr
    assert "Traceback" not in out.stderr


def test_bench_constructor_exception_exits_one_without_a_traceback() -> None:
    # The served env's own constructor raises (an EnvServerError), as `serve` reports it.
    out = run("bench", "gym", "--provider", "process", "--steps", "5", "--warmup", "0",
              "--env-kwargs", '{"env_id": "CartPole-v1", "bogus": 1}')
    assert out.returncode == 1, out.stderr
    assert "cannot make env 'gym'" in out.stderr and "fix:" in out.stderr
    assert "Traceback" not in out.stderr
