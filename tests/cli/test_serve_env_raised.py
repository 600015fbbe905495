"""`serve` reports an env constructor's own exception as an error with a fix, not a
traceback (tests/cli/)."""

from __future__ import annotations

from tests.cli.cli_helpers import run


def test_serve_reports_a_constructor_exception_without_a_traceback() -> None:
    # The served env's own constructor raises (gymnasium.make: an unknown argument).
    out = run("serve", "gym", "--port", "0", "--env-kwargs", '{"env_id": "CartPole-v1", "bogus": 1}')
    assert out.returncode == 1, out.stderr
    assert "cannot make env 'gym'" in out.stderr and "fix:" in out.stderr
    assert "Traceback" not in out.stderr


def test_bench_refuses_a_negative_seed_as_a_bad_argument() -> None:
    out = run("bench", "echo", "--seed", "-1", "--steps", "5")
    assert out.returncode == 2 and "--seed" in out.stderr and "Traceback" not in out.stderr


def test_serve_gym_with_id_in_env_kwargs_names_env_id() -> None:
    out = run("serve", "gym", "--port", "0", "--env-kwargs", '{"id": "CartPole-v1"}')
    assert out.returncode == 2, out.stderr
    assert "env_id='CartPole-v1'" in out.stderr and "--env-kwargs" in out.stderr
    assert "multiple values" not in out.stderr and "Traceback" not in out.stderr
